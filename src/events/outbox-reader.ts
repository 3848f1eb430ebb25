import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { settledHorizon, type EventPayload, type EventType } from './events.js';

/** An outbox row as the subscription door needs it: the payload plus whose wallet it concerns. */
export interface OutboxRow {
  type: EventType;
  userId: string;
  payload: EventPayload;
}

/** A position in the outbox: rows after (xid, position) are unread. */
interface Cursor {
  xid: string;
  position: string;
}

const BATCH = 1000;

/**
 * One instance's reader of the outbox. Reads only rows below the settled horizon (their writing
 * transaction is older than every one still running in this database), in (xid, position) order: such rows can
 * no longer be joined by a late commit with a lower position, so the cursor never skips one.
 * It reads on a wake-up (a commit hook, a NOTIFY hint) and every `intervalMs` to cover a missed
 * hint; at most one read runs at a time, and wake-ups during a read cause one more read.
 */
export class OutboxReader {
  private cursor: Cursor | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(
    private readonly forkEm: () => EntityManager,
    private readonly log: Logger,
    private readonly intervalMs: number,
    /** Users with subscribers on this instance; other users' rows are not fetched. */
    private readonly interestedUsers: () => string[],
    private readonly deliver: (rows: OutboxRow[]) => void,
  ) {}

  /** Starts from the present: what committed before start is for catch-up queries, not for this reader. */
  async start(): Promise<void> {
    this.stopped = false;
    this.cursor = { xid: await settledHorizon(this.forkEm()), position: '0' };
    this.schedule();
  }

  /** Something may have committed: read soon. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop();
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), this.intervalMs);
    this.timer.unref();
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.readOnce();
      } while (this.again && !this.stopped);
    } catch (err) {
      this.log.warn({ err: { message: (err as Error).message } }, 'outbox read failed; retrying');
    } finally {
      this.running = undefined;
      this.schedule();
    }
  }

  /** Reads what settled since the cursor, hands it over, moves the cursor. */
  async readOnce(): Promise<void> {
    const cursor = this.cursor;
    if (!cursor) return;
    const horizon = await settledHorizon(this.forkEm());
    const users = this.interestedUsers();
    if (users.length === 0) {
      if (this.cursor === cursor) this.cursor = { xid: horizon, position: '0' };
      return;
    }
    const found = await this.forkEm().execute<
      Array<{ xid: string; position: string; type: EventType; userId: string; payload: EventPayload }>
    >(
      `select e.xid::text as xid, e.position::text as position, e.type, w.user_id as "userId", e.payload
         from events e
         join payment_requests pr on pr.id = e.payment_request_id
         join wallets w on w.id = pr.wallet_id
        where (e.xid, e.position) > (?::xid8, ?::bigint) and e.xid < ?::xid8 and w.user_id = any(array[?]::uuid[])
        order by e.xid, e.position
        limit ${BATCH}`,
      [cursor.xid, cursor.position, horizon, users],
    );
    if (this.cursor !== cursor) return;
    const last = found.at(-1);
    this.cursor = found.length >= BATCH && last ? { xid: last.xid, position: last.position } : { xid: horizon, position: '0' };
    if (found.length > 0) this.deliver(found.map((r) => ({ type: r.type, userId: r.userId, payload: r.payload })));
    if (found.length >= BATCH) this.again = true;
  }

  /** Stops reading and waits for a read in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
