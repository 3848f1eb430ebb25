import type { Attributes } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { SecretBox } from './secret-box.js';
import { webhookHeaders } from './signing.js';
import { WEBHOOK_USER_AGENT, postWebhook, webhookPostOptions, type PostOutcome } from './http-post.js';
import { tracing, webhookSpan } from '../observability/tracing.js';

/*
 * The one signed send of a webhook: deliveries (first attempts, retries, resends: src/webhooks/
 * delivery-worker.ts) and test sends (webhook-endpoint.service.ts) all go through `send`. Its
 * phases, as svix-server's worker has them: `prepare` signs the message for its endpoint (pure:
 * no I/O), `post` makes the HTTP request under this environment's rules and says what came of
 * it. No phase touches the database: whoever calls it holds no transaction, no connection and no
 * row lock while it runs (the worker holds a lease; the test send commits first).
 */

/** Where a message goes and what signs it, as the database keeps it (secrets sealed). */
export interface SendTarget {
  endpointId: string;
  url: string;
  secretEnc: string;
  /** The previous secret while a rotation overlaps (it signs too), else null. */
  previousSecretEnc: string | null;
}

/** What is sent: the Standard Webhooks message id (webhook-id) and the body exactly as signed. */
export interface WebhookMessage {
  id: string;
  body: string;
  /** Span attributes of this send (with tracing on): which attempt, or that it is a test. */
  trace: Attributes;
}

/** Phase 1: the signed request, ready to go. */
export interface PreparedSend {
  readonly phase: 'prepared';
  readonly url: URL;
  readonly body: string;
  readonly headers: Record<string, string>;
  readonly trace: Attributes;
}

/** Phase 2: what came of the request. */
export type CompletedSend =
  /** The receiver answered (`delivered`: with a 2xx; a 3xx is not followed). */
  | { readonly phase: 'answered'; readonly delivered: boolean; readonly status: number; readonly durationMs: number; readonly excerpt?: string }
  /** No answer: a timeout, a refused or blocked address, a network error, or a request that could not be made. */
  | { readonly phase: 'unanswered'; readonly delivered: false; readonly error: string; readonly durationMs: number };

/** How a completed send reads for metrics: the status class, or why no answer came. */
export function sendResult(sent: CompletedSend): string {
  if (sent.phase === 'answered') return `${Math.floor(sent.status / 100)}xx`;
  if (sent.error.startsWith('timeout')) return 'timeout';
  if (sent.error === 'address not allowed') return 'blocked';
  return 'network_error';
}

/** Signs and posts webhook messages; one per instance, shared by the delivery worker and the test send. */
export class WebhookSender {
  constructor(
    private readonly config: Pick<Config, 'webhookTimeoutMs' | 'appEnv'>,
    private readonly secrets: SecretBox,
    private readonly log: Logger,
  ) {}

  /** Signs `message` for `target`: one `v1,` signature per valid secret, over exactly the body sent. */
  prepare(target: SendTarget, message: WebhookMessage): PreparedSend {
    const secrets = [this.secrets.open(target.secretEnc), ...(target.previousSecretEnc ? [this.secrets.open(target.previousSecretEnc)] : [])];
    return {
      phase: 'prepared',
      url: new URL(target.url),
      body: message.body,
      headers: { 'user-agent': WEBHOOK_USER_AGENT, ...webhookHeaders(secrets, message.id, message.body) },
      trace: { 'webhook.event_id': message.id, 'webhook.endpoint_id': target.endpointId, ...message.trace },
    };
  }

  /**
   * POSTs a prepared message (`webhookPostOptions`: the timeout; in production public addresses
   * only, no redirects), within a client span whose traceparent the receiver gets when tracing is on.
   */
  async post(prepared: PreparedSend, opts: { excerptBytes?: number } = {}): Promise<CompletedSend> {
    const post = (headers: Record<string, string>): Promise<PostOutcome> =>
      postWebhook(prepared.url, prepared.body, headers, { ...webhookPostOptions(this.config), ...opts });
    const outcome = tracing.on ? await webhookSpan(prepared.url, prepared.trace, prepared.headers, post) : await post(prepared.headers);
    if (outcome.status === undefined) return { phase: 'unanswered', delivered: false, error: outcome.error ?? 'request failed', durationMs: outcome.durationMs };
    return {
      phase: 'answered',
      delivered: outcome.status >= 200 && outcome.status < 300,
      status: outcome.status,
      durationMs: outcome.durationMs,
      ...(outcome.excerpt !== undefined ? { excerpt: outcome.excerpt } : {}),
    };
  }

  /** Both phases; a message that cannot be signed or sent at all (a secret that does not open) is unanswered, and logged. */
  async send(target: SendTarget, message: WebhookMessage, opts: { excerptBytes?: number } = {}): Promise<CompletedSend> {
    try {
      return await this.post(this.prepare(target, message), opts);
    } catch (err) {
      this.log.error({ err: { message: (err as Error).message }, endpointId: target.endpointId, messageId: message.id }, 'webhook could not be sent');
      return { phase: 'unanswered', delivered: false, error: 'request failed', durationMs: 0 };
    }
  }
}
