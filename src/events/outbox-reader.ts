import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { PollLoop } from '../background/poll-loop.js';
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
  private readonly poll: PollLoop;

  constructor(
    private readonly forkEm: () => EntityManager,
    log: Logger,
    intervalMs: number,
    /** Users with subscribers on this instance; other users' rows are not fetched. */
    private readonly interestedUsers: () => string[],
    private readonly deliver: (rows: OutboxRow[]) => void,
  ) {
    this.poll = new PollLoop(() => this.readOnce(), intervalMs, (err) =>
      log.warn({ err: { message: (err as Error).message } }, 'outbox read failed; retrying'),
    );
  }

  /** Starts from the present: what committed before start is for catch-up queries, not for this reader. */
  async start(): Promise<void> {
    this.cursor = { xid: await settledHorizon(this.forkEm()), position: '0' };
    this.poll.start({ now: false });
  }

  /** Something may have committed: read soon. */
  wake(): void {
    this.poll.wake();
  }

  /** Reads what settled since the cursor, hands it over, moves the cursor; true when a full batch was read. */
  async readOnce(): Promise<boolean> {
    const cursor = this.cursor;
    if (!cursor) return false;
    const horizon = await settledHorizon(this.forkEm());
    const users = this.interestedUsers();
    if (users.length === 0) {
      if (this.cursor === cursor) this.cursor = { xid: horizon, position: '0' };
      return false;
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
    if (this.cursor !== cursor) return false;
    const last = found.at(-1);
    this.cursor = found.length >= BATCH && last ? { xid: last.xid, position: last.position } : { xid: horizon, position: '0' };
    if (found.length > 0) this.deliver(found.map((r) => ({ type: r.type, userId: r.userId, payload: r.payload })));
    return found.length >= BATCH;
  }

  /** Stops reading and waits for a read in progress. */
  stop(): Promise<void> {
    return this.poll.stop();
  }
}
