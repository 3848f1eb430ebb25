import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/openapi.js';
import { WalletGatewayError } from './errors.js';
import { retryAfterMs, retryingFetch, type RetryInfo } from './retry.js';
import { waitForOutcome, type PaymentOutcome, type WaitOptions } from './outcome.js';
import { webhooks } from './webhooks.js';
import { consentReceiptVerifier, type ConsentReceiptClaims } from './consent.js';
import type {
  Balance,
  BalanceTransaction,
  BalanceTransactionPage,
  BalanceTransactionType,
  Payout,
  PayoutPage,
  PayoutStatus,
  EventDetail,
  EventPage,
  EventType,
  PaymentRequest,
  PaymentRequestCreated,
  PaymentLinkInput,
  PaymentRequestInput,
  PaymentRequestPage,
  PaymentRequestState,
  Transaction,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookTestResult,
} from './types.js';

export interface WalletGatewayOptions {
  /** Your secret key (`sk_test_...` for a development gateway, `sk_live_...` in production). Keep it on your server. */
  secretKey: string;
  /** Where the gateway is (default `http://127.0.0.1:3000`), without `/api/v1`. */
  baseUrl?: string;
  /** Retries of 409 (same Idempotency-Key still running), 429 and 503 per call (default 3; 0 turns them off). */
  maxRetries?: number;
  /** A `Retry-After` longer than this is not waited for: the error is thrown (default 60000). */
  maxRetryDelayMs?: number;
  /** Called before each retry (log it, count it). */
  onRetry?: (info: RetryInfo) => void;
  /** The fetch to use (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
}

/** Options of a POST. */
export interface PostOptions {
  /** Your own Idempotency-Key; by default every POST gets a new random one (used again by the client's own retries). */
  idempotencyKey?: string;
}

/** Filters of `paymentRequests.list`: every one optional. */
export interface PaymentRequestFilter {
  status?: PaymentRequestState;
  reference?: string;
  /** Created at or after (a Date, or ISO 8601 text). */
  createdFrom?: Date | string;
  /** Created before. */
  createdTo?: Date | string;
  /** The previous page's `nextAfter`. */
  after?: string;
  /** 1-100, default 20. */
  limit?: number;
}

/** Filters of `balanceTransactions.list`: every one optional. */
export interface BalanceTransactionFilter {
  type?: BalanceTransactionType;
  /** A payout's items and its own `payout` entry. */
  payoutId?: string;
  /** Made at or after (a Date, or ISO 8601 text). */
  createdFrom?: Date | string;
  /** Made before. */
  createdTo?: Date | string;
  /** The previous page's `nextAfter`. */
  after?: string;
  /** 1-100, default 20. */
  limit?: number;
}

/** Filters of `payouts.list`: every one optional. */
export interface PayoutFilter {
  status?: PayoutStatus;
  createdFrom?: Date | string;
  createdTo?: Date | string;
  after?: string;
  limit?: number;
}

/** Filters of `events.list`. */
export interface EventFilter {
  /** The last event id you have (`nextAfter` of the previous page). */
  after?: string;
  /** 1-100, default 50. */
  limit?: number;
  type?: EventType | EventType[];
  paymentRequestId?: string;
}

/** What openapi-fetch answers: the body, or the error body, and the response. */
interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

const newKey = (): string => globalThis.crypto.randomUUID();
const iso = (t: Date | string | undefined): string | undefined => (t instanceof Date ? t.toISOString() : t);

/** The body of a success, or a WalletGatewayError with the gateway's status, message and request id. */
function unwrap<T>({ data, error, response }: FetchResult<T>): T {
  if (response.ok && error === undefined) return data as T;
  const body = (error ?? {}) as { statusCode?: unknown; message?: unknown };
  const retryAfter = retryAfterMs(response);
  throw new WalletGatewayError({
    statusCode: typeof body.statusCode === 'number' ? body.statusCode : response.status,
    message: typeof body.message === 'string' ? body.message : response.statusText || `HTTP ${response.status}`,
    requestId: response.headers.get('x-request-id'),
    retryAfter: retryAfter === undefined ? null : Math.ceil(retryAfter / 1000),
  });
}

/**
 * The merchant's client of the wallet gateway's REST API (`/api/v1`): typed from the gateway's
 * OpenAPI document, with what every integration otherwise writes by hand: the secret key on every
 * call, an Idempotency-Key on every POST, retries that honour `Retry-After` with the same key,
 * errors that carry the status and the request id, `waitForOutcome` and `webhooks.verify`.
 */
export class WalletGateway {
  /** The generated, typed openapi-fetch client underneath (authenticated, retrying), for anything not wrapped here. */
  readonly api: Client<paths>;
  /** Webhook signature checks (`webhooks.verify(rawBody, headers, secret)`). */
  readonly webhooks = webhooks;

  /** Verifies consent receipts against this gateway's published keys (fetched once, kept, refetched on an unknown kid). */
  private readonly consentVerifier: (receipt: string) => Promise<ConsentReceiptClaims>;

  constructor(options: WalletGatewayOptions) {
    if (!options?.secretKey) throw new TypeError('WalletGateway: secretKey is required');
    const baseFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
    const baseUrl = (options.baseUrl ?? 'http://127.0.0.1:3000').replace(/\/+$/, '');
    this.consentVerifier = consentReceiptVerifier(`${baseUrl}/.well-known/jwks.json`, { fetch: baseFetch });
    this.api = createClient<paths>({
      baseUrl,
      headers: { authorization: `Bearer ${options.secretKey}`, 'user-agent': 'wallet-gateway-client-typescript/0.1' },
      fetch: retryingFetch({
        fetch: baseFetch,
        maxRetries: options.maxRetries ?? 3,
        maxDelayMs: options.maxRetryDelayMs ?? 60_000,
        onRetry: options.onRetry,
      }),
    });
  }

  /** Accounts: resolve a user's username or phone number to a wallet id. */
  readonly accounts = {
    /** The wallet id of a username or phone number (404 when there is no such user). */
    walletId: async (identifier: string): Promise<string> =>
      unwrap(await this.api.GET('/api/v1/account/{identifier}', { params: { path: { identifier } } })).walletId,
  };

  /** Payment requests: create, read, cancel, list. */
  readonly paymentRequests = {
    /** Asks the wallet for money; the user approves or rejects in the app. Sent with an Idempotency-Key (yours, or a new one). */
    create: async (input: PaymentRequestInput, options: PostOptions = {}): Promise<PaymentRequestCreated> =>
      unwrap(
        await this.api.POST('/api/v1/wallet/request-payment', {
          body: input,
          params: { header: { 'Idempotency-Key': options.idempotencyKey ?? newKey() } },
        }),
      ),
    /**
     * An open request (a payment link): no wallet; any wallet user who opens its `paymentUrl`
     * (or scans its QR code, `qrCode`) can pay it, and the first approval binds it.
     */
    createPaymentLink: async (input: PaymentLinkInput, options: PostOptions = {}): Promise<PaymentRequestCreated> =>
      unwrap(
        await this.api.POST('/api/v1/wallet/payment-links', {
          body: input,
          params: { header: { 'Idempotency-Key': options.idempotencyKey ?? newKey() } },
        }),
      ),
    /** The request's `paymentUrl` as a QR code: SVG text (default) or PNG bytes. */
    qrCode: async <F extends 'svg' | 'png' = 'svg'>(id: string, options: { format?: F } = {}): Promise<F extends 'png' ? Uint8Array : string> => {
      const png = options.format === 'png';
      const result = await this.api.GET('/api/v1/wallet/payment-request/{requestId}/qr', {
        params: { path: { requestId: id } },
        headers: { accept: png ? 'image/png' : 'image/svg+xml' },
        parseAs: png ? 'arrayBuffer' : 'text',
      });
      const body = unwrap(result as FetchResult<unknown>);
      return (png ? new Uint8Array(body as ArrayBuffer) : body) as F extends 'png' ? Uint8Array : string;
    },
    /** The request as it is now (`EXPIRED` from `expiresAt` on). */
    get: async (id: string): Promise<PaymentRequest> =>
      unwrap(await this.api.GET('/api/v1/wallet/payment-request/{requestId}', { params: { path: { requestId: id } } })),
    /** Cancels a PENDING request (409 once it is not). */
    cancel: async (id: string, options: PostOptions = {}): Promise<PaymentRequest> =>
      unwrap(
        await this.api.POST('/api/v1/wallet/payment-request/{requestId}/cancel', {
          params: { path: { requestId: id }, header: { 'Idempotency-Key': options.idempotencyKey ?? newKey() } },
        }),
      ) as PaymentRequest,
    /** One page of your requests, newest first, filtered; pass `nextAfter` as `after` while `hasMore`. */
    list: async (filter: PaymentRequestFilter = {}): Promise<PaymentRequestPage> =>
      unwrap(
        await this.api.GET('/api/v1/wallet/payment-requests', {
          params: {
            query: {
              status: filter.status,
              reference: filter.reference,
              createdFrom: iso(filter.createdFrom),
              createdTo: iso(filter.createdTo),
              after: filter.after,
              limit: filter.limit,
            },
          },
        }),
      ),
    /** Every request matching the filter, newest first, page after page. */
    all: (filter: Omit<PaymentRequestFilter, 'after'> = {}): AsyncGenerator<PaymentRequest> => this.allPaymentRequests(filter),
  };

  /** Transactions: money that moved (or is held) for an approved request. */
  readonly transactions = {
    get: async (id: string): Promise<Transaction> =>
      unwrap(await this.api.GET('/api/v1/wallet/transaction/{transactionId}', { params: { path: { transactionId: id } } })),
    /** Captures a held (PENDING, `capture: MANUAL`) transaction: all of it, or `amount`; the rest is released (409 once it is not PENDING). */
    capture: async (id: string, input: { amount?: number } = {}, options: PostOptions = {}): Promise<Transaction> =>
      unwrap(
        await this.api.POST('/api/v1/wallet/transaction/{transactionId}/capture', {
          body: input,
          params: { path: { transactionId: id }, header: { 'Idempotency-Key': options.idempotencyKey ?? newKey() } },
        }),
      ),
    /** Voids a held transaction: CANCELLED, the whole hold released (409 once it is not PENDING). */
    void: async (id: string, options: PostOptions = {}): Promise<Transaction> =>
      unwrap(
        await this.api.POST('/api/v1/wallet/transaction/{transactionId}/void', {
          params: { path: { transactionId: id }, header: { 'Idempotency-Key': options.idempotencyKey ?? newKey() } },
        }),
      ),
  };

  /** Your balance per currency: `available` (what the next payout takes) and `inPayouts` (made, not yet paid). */
  async balance(): Promise<Balance> {
    return unwrap(await this.api.GET('/api/v1/balance'));
  }

  /** Every change of your available balance (payments with their fee, refunds, payouts, reversals, adjustments), newest first. */
  readonly balanceTransactions = {
    /** One page, filtered; pass `nextAfter` as `after` while `hasMore`. */
    list: async (filter: BalanceTransactionFilter = {}): Promise<BalanceTransactionPage> =>
      unwrap(
        await this.api.GET('/api/v1/balance-transactions', {
          params: {
            query: {
              type: filter.type,
              payoutId: filter.payoutId,
              createdFrom: iso(filter.createdFrom),
              createdTo: iso(filter.createdTo),
              after: filter.after,
              limit: filter.limit,
            },
          },
        }),
      ),
    /** Every entry matching the filter, newest first, page after page. */
    all: (filter: Omit<BalanceTransactionFilter, 'after'> = {}): AsyncGenerator<BalanceTransaction> =>
      this.pages((after) => this.balanceTransactions.list({ ...filter, ...(after ? { after } : {}) })),
  };

  /** Your payouts: made once a day at the cut-off, then PAID or FAILED. */
  readonly payouts = {
    /** One page, newest first, filtered; pass `nextAfter` as `after` while `hasMore`. */
    list: async (filter: PayoutFilter = {}): Promise<PayoutPage> =>
      unwrap(
        await this.api.GET('/api/v1/payouts', {
          params: { query: { status: filter.status, createdFrom: iso(filter.createdFrom), createdTo: iso(filter.createdTo), after: filter.after, limit: filter.limit } },
        }),
      ),
    get: async (id: string): Promise<Payout> => unwrap(await this.api.GET('/api/v1/payouts/{payoutId}', { params: { path: { payoutId: id } } })),
    /** Every payout matching the filter, newest first, page after page. */
    all: (filter: Omit<PayoutFilter, 'after'> = {}): AsyncGenerator<Payout> => this.pages((after) => this.payouts.list({ ...filter, ...(after ? { after } : {}) })),
  };

  /**
   * A payout's reconciliation report (CSV, RFC 4180: a header line, then one line per balance
   * transaction it holds, with the consent receipt of each payment): as text, or with
   * `{ stream: true }` as the response's byte stream, for a payout too large to hold in memory.
   */
  async payoutReport(id: string): Promise<string>;
  async payoutReport(id: string, options: { stream: true }): Promise<ReadableStream<Uint8Array>>;
  async payoutReport(id: string, options: { stream?: boolean } = {}): Promise<string | ReadableStream<Uint8Array>> {
    const result = await this.api.GET('/api/v1/payouts/{payoutId}/report', {
      params: { path: { payoutId: id } },
      headers: { accept: 'text/csv' },
      parseAs: options.stream ? 'stream' : 'text',
    });
    return unwrap(result as FetchResult<unknown>) as string | ReadableStream<Uint8Array>;
  }

  /** Your webhook endpoints. */
  readonly webhookEndpoints = {
    /** Registers an endpoint; the answer's `secret` (`whsec_...`) is shown this once: keep it to verify deliveries. */
    create: async (input: { url: string; events?: EventType[] }, options: PostOptions = {}): Promise<WebhookEndpointWithSecret> =>
      unwrap(
        await this.api.POST('/api/v1/webhook-endpoints', {
          body: input,
          params: { header: { 'Idempotency-Key': options.idempotencyKey ?? newKey() } },
        }),
      ),
    /** Your endpoints with their last delivery attempt and pending deliveries. */
    list: async (): Promise<WebhookEndpoint[]> => unwrap(await this.api.GET('/api/v1/webhook-endpoints')).data,
    delete: async (id: string): Promise<WebhookEndpoint> =>
      unwrap(await this.api.DELETE('/api/v1/webhook-endpoints/{endpointId}', { params: { path: { endpointId: id } } })),
    /** A new signing secret; the old one keeps signing beside it for 24 hours. */
    rotateSecret: async (id: string, options: PostOptions = {}): Promise<WebhookEndpointWithSecret> =>
      unwrap(
        await this.api.POST('/api/v1/webhook-endpoints/{endpointId}/rotate-secret', {
          params: { path: { endpointId: id }, header: { 'Idempotency-Key': options.idempotencyKey ?? newKey() } },
        }),
      ),
    /** Enables a DISABLED endpoint again (pending deliveries resume; given-up ones: `events.resend`). */
    enable: async (id: string, options: PostOptions = {}): Promise<WebhookEndpoint> =>
      unwrap(
        await this.api.POST('/api/v1/webhook-endpoints/{endpointId}/enable', {
          params: { path: { endpointId: id }, header: { 'Idempotency-Key': options.idempotencyKey ?? newKey() } },
        }),
      ),
    /** Sends a signed `webhook.test` event to the endpoint now and tells what it answered. */
    test: async (id: string, options: PostOptions = {}): Promise<WebhookTestResult> =>
      unwrap(
        await this.api.POST('/api/v1/webhook-endpoints/{endpointId}/test', {
          params: { path: { endpointId: id }, header: { 'Idempotency-Key': options.idempotencyKey ?? newKey() } },
        }),
      ),
  };

  /** Your events (the bodies webhooks deliver), oldest first. */
  readonly events = {
    list: async (filter: EventFilter = {}): Promise<EventPage> =>
      unwrap(
        await this.api.GET('/api/v1/events', {
          params: {
            query: {
              after: filter.after,
              limit: filter.limit,
              type: filter.type === undefined ? undefined : Array.isArray(filter.type) ? filter.type : [filter.type],
              paymentRequestId: filter.paymentRequestId,
            },
          },
        }),
      ) as EventPage,
    /** One event with its deliveries and their attempts. */
    get: async (id: string): Promise<EventDetail> =>
      unwrap(await this.api.GET('/api/v1/events/{eventId}', { params: { path: { eventId: id } } })),
    /** Sends an event again to your enabled endpoints (same webhook-id). */
    resend: async (id: string, options: PostOptions = {}): Promise<EventDetail> =>
      unwrap(
        await this.api.POST('/api/v1/events/{eventId}/resend', {
          params: { path: { eventId: id }, header: { 'Idempotency-Key': options.idempotencyKey ?? newKey() } },
        }),
      ),
  };

  /**
   * Waits until the payment request is APPROVED, REJECTED, CANCELLED or EXPIRED and returns it
   * (with its transaction when approved). Reads the request's final event from the events API,
   * falls back to reading its status, and always ends: at `expiresAt` a request that nobody
   * answered reads EXPIRED.
   */
  waitForOutcome(id: string, options: WaitOptions = {}): Promise<PaymentOutcome> {
    return waitForOutcome(this, id, options);
  }

  /**
   * Verifies a consent receipt (an approved payment request's or transaction's `consentReceipt`)
   * with the keys this gateway publishes at `/.well-known/jwks.json` (Ed25519, `typ:
   * consent+jwt`) and returns its claims; throws a ConsentReceiptError on any failure. Check that
   * the claims are the payment you expected (id, amount, currency, merchant name).
   */
  verifyConsentReceipt(receipt: string): Promise<ConsentReceiptClaims> {
    return this.consentVerifier(receipt);
  }

  /** The items of page after page of a list, until it has no more. */
  private async *pages<T>(list: (after: string | undefined) => Promise<{ data: T[]; hasMore: boolean; nextAfter: string | null }>): AsyncGenerator<T> {
    let after: string | undefined;
    for (;;) {
      const page = await list(after);
      yield* page.data;
      if (!page.hasMore || !page.nextAfter) return;
      after = page.nextAfter;
    }
  }

  private async *allPaymentRequests(filter: Omit<PaymentRequestFilter, 'after'>): AsyncGenerator<PaymentRequest> {
    let after: string | undefined;
    for (;;) {
      const page = await this.paymentRequests.list({ ...filter, ...(after ? { after } : {}) });
      yield* page.data;
      if (!page.hasMore || !page.nextAfter) return;
      after = page.nextAfter;
    }
  }
}
