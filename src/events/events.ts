import type { EntityManager } from '@mikro-orm/postgresql';

/** The PostgreSQL channel every gateway instance LISTENs on. */
export const EVENTS_CHANNEL = 'wallet_gateway_events';

/** An event as it travels through NOTIFY: ids only, the receiver reads the rest. */
export interface WalletEvent {
  type: 'paymentRequested' | 'paymentRequestUpdated';
  paymentRequestId: string;
  userId: string;
}

/**
 * Queues an event inside the caller's database transaction with `pg_notify`: PostgreSQL
 * delivers it to every listening instance when, and only if, the transaction commits.
 */
export async function publishInTransaction(em: EntityManager, event: WalletEvent): Promise<void> {
  await em.execute('select pg_notify(?, ?)', [EVENTS_CHANNEL, JSON.stringify(event)]);
}
