import type { EntityManager } from '@mikro-orm/postgresql';

/** The PostgreSQL channel every gateway instance LISTENs on. */
export const EVENTS_CHANNEL = 'wallet_gateway_events';

export type WalletEventType = 'paymentRequested' | 'paymentRequestUpdated';

/** An event as it travels through NOTIFY: ids only (plus when it was raised), the receiver reads the rest. */
export interface WalletEvent {
  type: WalletEventType;
  paymentRequestId: string;
  userId: string;
  /** Epoch milliseconds at publication, for the delivery-lag metric. */
  at: number;
}

/** Events queued by a transaction, for delivery in-process after it commits (embedded database). */
const pendingByTransaction = new WeakMap<object, WalletEvent[]>();

/**
 * Queues an event inside the caller's database transaction with `pg_notify`: PostgreSQL
 * delivers it to every listening instance when, and only if, the transaction commits. The event
 * is also remembered against the transaction so that a commit hook can deliver it in-process
 * where NOTIFY cannot reach a listener (the embedded PostgreSQL).
 */
export async function publishInTransaction(em: EntityManager, event: Omit<WalletEvent, 'at'>): Promise<void> {
  const full: WalletEvent = { ...event, at: Date.now() };
  await em.execute('select pg_notify(?, ?)', [EVENTS_CHANNEL, JSON.stringify(full)]);
  const trx = em.getTransactionContext() as object | undefined;
  if (trx) {
    const list = pendingByTransaction.get(trx) ?? [];
    list.push(full);
    pendingByTransaction.set(trx, list);
  }
}

/**
 * The events a committed transaction queued (see `publishInTransaction`). Every commit hook
 * registered on the ORM reads them (each gateway instance delivers to its own subscribers); the
 * list goes with the transaction object.
 */
export function committedEvents(trx: object): readonly WalletEvent[] {
  return pendingByTransaction.get(trx) ?? [];
}

/** Parses a NOTIFY payload; undefined when it is not one of ours. */
export function parseEvent(payload: string | undefined): WalletEvent | undefined {
  if (!payload) return undefined;
  try {
    const e = JSON.parse(payload) as Partial<WalletEvent>;
    if (
      (e.type === 'paymentRequested' || e.type === 'paymentRequestUpdated') &&
      typeof e.paymentRequestId === 'string' &&
      typeof e.userId === 'string'
    ) {
      return { type: e.type, paymentRequestId: e.paymentRequestId, userId: e.userId, at: typeof e.at === 'number' ? e.at : Date.now() };
    }
  } catch {
    /* not ours */
  }
  return undefined;
}
