import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { WebhookEvent } from './types.js';

export { WebhookVerificationError };

/** Request headers as Node's `req.headers`, a Fetch `Headers`, or a plain object. */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

/** The three Standard Webhooks headers, whatever the case or shape they arrived in. */
function signatureHeaders(headers: HeadersLike): Record<string, string> {
  const pick = (name: string): string => {
    if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? '';
    const entry = Object.entries(headers as Record<string, string | string[] | undefined>).find(([k]) => k.toLowerCase() === name);
    const value = entry?.[1];
    return Array.isArray(value) ? value.join(' ') : (value ?? '');
  };
  return { 'webhook-id': pick('webhook-id'), 'webhook-timestamp': pick('webhook-timestamp'), 'webhook-signature': pick('webhook-signature') };
}

/**
 * Checks a webhook the gateway (or `npx wallet-gateway listen`) sent, with the reference Standard
 * Webhooks implementation (`standardwebhooks`): the signature over the raw body with your
 * endpoint's `whsec_...` secret (either of the two during a secret rotation), and a timestamp
 * within 5 minutes. Returns the event, typed by its `type`; throws WebhookVerificationError when
 * anything does not match.
 *
 * Pass the body exactly as it arrived (a string or the bytes), never a re-serialised
 * `JSON.stringify(req.body)`: a single changed byte fails the signature.
 */
export function verify(rawBody: string | Uint8Array, headers: HeadersLike, secret: string): WebhookEvent {
  const payload = typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  const event = new Webhook(secret).verify(payload, signatureHeaders(headers)) as WebhookEvent | undefined;
  if (event === null || typeof event !== 'object' || typeof event.type !== 'string' || typeof event.id !== 'string') {
    throw new WebhookVerificationError('The body is not an event');
  }
  return event;
}

/** `webhooks.verify(rawBody, headers, secret)`. */
export const webhooks = { verify };
