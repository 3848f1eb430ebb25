import { WalletGatewayError, WalletGatewayTimeoutError } from './errors.js';
import type { FinalState, GatewayEvent, PaymentRequest, Transaction } from './types.js';
import type { WalletGateway } from './client.js';

/** How a payment request ended. */
export interface PaymentOutcome {
  status: FinalState;
  /** The request in its final state. */
  paymentRequest: PaymentRequest;
  /** The COMPLETED transaction of an APPROVED request; null otherwise. */
  transaction: Transaction | null;
  /** The event that told it (its id is the webhook-id of the same news); null when it was read from the status. */
  event: GatewayEvent | null;
}

export interface WaitOptions {
  /** How often to look (default 1000 ms). */
  pollIntervalMs?: number;
  /** Give up (WalletGatewayTimeoutError) after this long; default: 60 s past the request's `expiresAt`. */
  timeoutMs?: number;
  /** Stop waiting (rejects with the signal's reason). */
  signal?: AbortSignal;
}

/** The events that end a payment request, by the state they end it in. */
const FINAL_EVENTS = {
  'payment_request.approved': 'APPROVED',
  'payment_request.rejected': 'REJECTED',
  'payment_request.cancelled': 'CANCELLED',
  'payment_request.expired': 'EXPIRED',
} as const satisfies Record<string, FinalState>;
type FinalEventType = keyof typeof FINAL_EVENTS;

const isFinal = (pr: PaymentRequest): pr is PaymentRequest & { status: FinalState } => pr.status !== 'PENDING';

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * `WalletGateway.waitForOutcome`: the request's final event from the events API
 * (`GET /events?paymentRequestId=&type=<final types>`), else its status (`GET /wallet/payment-request/{id}`)
 * when the events API cannot answer, and in any case once `expiresAt` has passed (the status
 * reads EXPIRED from then on, before the expiry's event is written).
 */
export async function waitForOutcome(gateway: WalletGateway, id: string, options: WaitOptions = {}): Promise<PaymentOutcome> {
  const interval = options.pollIntervalMs ?? 1000;
  const fromStatus = async (pr: PaymentRequest & { status: FinalState }): Promise<PaymentOutcome> => ({
    status: pr.status,
    paymentRequest: pr,
    transaction: pr.status === 'APPROVED' && pr.transactionId ? await gateway.transactions.get(pr.transactionId) : null,
    event: null,
  });

  const first = await gateway.paymentRequests.get(id);
  if (isFinal(first)) return fromStatus(first);
  const expiresAt = Date.parse(first.expiresAt);
  const deadline = Date.now() + (options.timeoutMs ?? Math.max(0, expiresAt - Date.now()) + 60_000);
  const types = Object.keys(FINAL_EVENTS) as FinalEventType[];

  while (Date.now() < deadline) {
    await sleep(Math.max(0, Math.min(interval, deadline - Date.now())), options.signal);
    let readStatus = Date.now() >= expiresAt;
    try {
      const page = await gateway.events.list({ paymentRequestId: id, type: types, limit: 10 });
      // Filtered again here: a gateway that does not know the filters answers every event.
      const final = page.data.find((e) => e.type in FINAL_EVENTS && 'paymentRequest' in e.data && e.data.paymentRequest.id === id);
      if (final && 'paymentRequest' in final.data) {
        return {
          status: FINAL_EVENTS[final.type as FinalEventType],
          paymentRequest: final.data.paymentRequest,
          transaction: 'transaction' in final.data ? final.data.transaction : null,
          event: final,
        };
      }
    } catch (err) {
      // Only the caller's own mistakes end the wait; anything else falls back to the status.
      if (err instanceof WalletGatewayError && (err.statusCode === 401 || err.statusCode === 403)) throw err;
      readStatus = true;
    }
    if (readStatus) {
      const now = await gateway.paymentRequests.get(id);
      if (isFinal(now)) return fromStatus(now);
    }
  }
  throw new WalletGatewayTimeoutError(`Payment request ${id} was still PENDING when waitForOutcome gave up`);
}
