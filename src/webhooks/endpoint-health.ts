import type { Config } from '../config.js';
import type { Tx } from '../db/unit-of-work.js';
import { DELIVERIES_DUE_NOW, ENABLE_ENDPOINT, ENDPOINT_ANSWERED, ENDPOINT_FAILED, LOCK_ENDPOINT, type EndpointRow } from './statements.js';

/*
 * An endpoint's health, in one place: its failure clock (`failing_since`: when it stopped
 * answering 2xx), disabling it once that clock has run WEBHOOK_DISABLE_AFTER_SECONDS, and enabling
 * it again. Each runs inside its caller's transaction, as that transaction's first statement on
 * the endpoint's row (the lock order of src/webhooks/statements.ts: the endpoint, then its deliveries).
 */
export class EndpointHealth {
  constructor(private readonly config: Pick<Config, 'webhookDisableAfterSeconds'>) {}

  /**
   * A delivery attempt's effect on its endpoint: a 2xx stops the failure clock; anything else
   * starts it, or disables the endpoint (with the reason) once it has run long enough. Test sends
   * are not attempts: they change nothing here.
   */
  async attempted(tx: Tx, endpointId: string, delivered: boolean, attemptedAt: Date): Promise<void> {
    if (delivered) await tx.run(ENDPOINT_ANSWERED, [endpointId]);
    else await tx.run(ENDPOINT_FAILED, [endpointId, attemptedAt, this.config.webhookDisableAfterSeconds]);
  }

  /**
   * Enables an endpoint again (a DISABLED one; one already ENABLED keeps its failure clock).
   * After a fix its pending deliveries are due at once, not at their next retry (the delivery
   * workers are woken at commit). Returns what it was, or undefined when the developer has no such endpoint.
   */
  async enable(tx: Tx, developerId: string, endpointId: string): Promise<EndpointRow['status'] | undefined> {
    const [row] = await tx.run(LOCK_ENDPOINT, [endpointId, developerId]);
    if (!row) return undefined;
    await tx.run(ENABLE_ENDPOINT, [endpointId]);
    if (row.status === 'DISABLED') {
      await tx.run(DELIVERIES_DUE_NOW, [endpointId]);
      tx.wrote([], true);
    }
    return row.status;
  }
}
