import type { EntityManager } from '@mikro-orm/postgresql';
import type { Payout } from './payout.entity.js';

/** The events of a payout (SPEC §16): their `data` is the payout body. */
export type PayoutEventType = 'payout.created' | 'payout.paid' | 'payout.failed';

/**
 * Writes a payout's event in the caller's database transaction (the outbox): the one place the
 * settlement room appends events.
 */
export async function writePayoutEvent(_tem: EntityManager, _type: PayoutEventType, _payout: Payout): Promise<void> {
  // Events come last (see the plan); until then nothing is written.
}
