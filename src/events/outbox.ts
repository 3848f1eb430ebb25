import type { Logger } from 'pino';
import { PollLoop } from '../background/poll-loop.js';
import type { EventType } from './events.js';

/*
 * The outbox's read side: readers take what committed since their last read (the write side is
 * append.ts, the payload format events.ts).
 */

// ---------------------------------------------------------------------------------------------
// Read
// ---------------------------------------------------------------------------------------------

/** An outbox row as readers need it: the event, its subject, whose wallet it concerns, and its payload as JSON text. */
export interface OutboxRow {
  id: string;
  type: EventType;
  subjectId: string;
  sequence: number;
  userId: string;
  /** The payload as JSON text (parsed only by a process with a subscriber for `userId`). */
  payload: string;
}

/** Runs one prepared statement (by name) and returns its rows. */
export type OutboxQuery = <T>(name: string, text: string, values: readonly unknown[]) => Promise<T[]>;

/** A PostgreSQL snapshot as `pg_current_snapshot()::text` prints it: `xmin:xmax:xip,...`. */
interface Snapshot {
  text: string;
  xmax: string;
  xip: string[];
}

function parseSnapshot(text: string): Snapshot {
  const [, xmax, xip] = text.split(':');
  return { text, xmax: xmax!, xip: xip ? xip.split(',') : [] };
}

export const OUTBOX_BATCH = 1000;

/** Whether (xid, position) `a` comes after `b`. */
function afterCursor(a: { xid: string; position: string }, b: { xid: string; position: string }): boolean {
  const [ax, bx] = [BigInt(a.xid), BigInt(b.xid)];
  return ax !== bx ? ax > bx : BigInt(a.position) > BigInt(b.position);
}

/**
 * One batch of the outbox: the rows that are visible in the snapshot S and were not visible in
 * the previous batch's snapshot P (PgQ's snapshot difference). A row not visible in P belongs to
 * a transaction that was running at P (its xid is in P's in-progress list) or began after P (its
 * xid is at least P's xmax), so the batch is an index range scan of `xid >= P.xmax` plus an index
 * probe per xid of P's in-progress list: its cost depends on what committed since P, not on the
 * table's size, a long transaction elsewhere, or how many processes read. Without $3 the
 * statement's own snapshot is S (returned as `snapshot`); a batch longer than $7 rows is read in
 * pages of the same S ($3, with the (xid, position) cursor $5/$6). The range scan has ONE lower
 * bound, ($1, $4) = the later of (P.xmax, -1) and the cursor: given two (`xid >= ...` and a row
 * comparison), PostgreSQL starts the index scan at one and filters by the other, which at 10
 * million rows read the whole index (bench/outbox-10m.mjs). Rows come in (xid,
 * position) order; one row with a null id when nothing is new.
 */
export const OUTBOX_BATCH_SQL = `
select s.snapshot, e.xid::text as xid, e.position::text as position, e.id, e.type,
       e.subject_id as "subjectId", e.sequence, e.user_id as "userId", e.payload::text as payload
  from (select pg_current_snapshot()::text as snapshot) s
  left join lateral (
    (select x.xid, x.position, x.id, x.type, x.subject_id, x.sequence, x.user_id, x.payload from events x
      where x.xid = any($2::xid8[]) and ($5::xid8 is null or (x.xid, x.position) > ($5::xid8, $6::bigint))
        and ($3::pg_snapshot is null or pg_visible_in_snapshot(x.xid, $3::pg_snapshot)))
    union all
    (select x.xid, x.position, x.id, x.type, x.subject_id, x.sequence, x.user_id, x.payload from events x
      where (x.xid, x.position) > ($1::xid8, $4::bigint)
        and ($3::pg_snapshot is null or pg_visible_in_snapshot(x.xid, $3::pg_snapshot))
      order by x.xid, x.position limit $7)
    order by 1, 2 limit $7
  ) e on true
 order by e.xid, e.position`;

const SNAPSHOT_SQL = 'select pg_current_snapshot()::text as snapshot';

/**
 * One instance's reader of the outbox (one per instance: the cluster's primary reads for its
 * workers, see cluster-outbox.ts). While no one listens it reads nothing; `attach` takes a
 * snapshot to start from, and from then on every batch is the snapshot difference above, so no
 * row is skipped or read twice whatever order transactions commit in. It reads on a wake-up (a
 * local commit, a NOTIFY hint) and every `intervalMs` to cover a lost hint; at most one read runs
 * at a time, and wake-ups during a read cause one more read.
 */
export class OutboxReader {
  /** The snapshot the last batch ended at; undefined while idle (no one listens). */
  private last: Snapshot | undefined;
  /** A batch read in pages: its snapshot and the last row handed over. */
  private paging: { snapshot: Snapshot; xid: string; position: string } | undefined;
  private readonly poll: PollLoop;
  private attaching: Promise<void> | undefined;

  constructor(
    private readonly query: OutboxQuery,
    log: Logger,
    intervalMs: number,
    /** Whether a user has listeners (other users' rows are skipped). */
    private readonly interested: (userId: string) => boolean,
    /** Whether anyone listens (else the reader stays idle). */
    private readonly anyInterest: () => boolean,
    private readonly deliver: (rows: OutboxRow[]) => void,
    /** Called after each read with what it read (the lag metric's hook). */
    private readonly onRead?: (rows: number) => void,
    /** Rows per read at most (a larger batch is read in pages of one snapshot). */
    private readonly batch = OUTBOX_BATCH,
  ) {
    this.poll = new PollLoop(() => this.readOnce(), intervalMs, (err) =>
      log.warn({ err: { message: (err as Error).message } }, 'outbox read failed; retrying'),
    );
  }

  start(): void {
    this.poll.start({ now: false });
  }

  /** Something may have committed: read soon. */
  wake(): void {
    this.poll.wake();
  }

  /**
   * Resolves once events committed from now on reach `deliver` (for users `interested` in them):
   * at once while the reader runs, else after it took the snapshot it starts from.
   */
  attach(): Promise<void> {
    if (this.last) return Promise.resolve();
    this.attaching ??= (async () => {
      try {
        const [row] = await this.query<{ snapshot: string }>('outbox_snapshot', SNAPSHOT_SQL, []);
        this.last ??= parseSnapshot(row!.snapshot);
        this.paging = undefined;
      } finally {
        this.attaching = undefined;
      }
    })();
    return this.attaching;
  }

  /** Reads one batch (or page) and hands it over; true when a full page was read (more to come). */
  async readOnce(): Promise<boolean> {
    if (!this.anyInterest()) {
      this.last = undefined;
      this.paging = undefined;
      this.onRead?.(0); // idle: nothing to read is no lag
      return false;
    }
    const last = this.last;
    if (!last) {
      // Someone listens but no snapshot was taken (the database was down at `attach`): start now.
      await this.attach();
      return false;
    }
    const paging = this.paging;
    // Rows of transactions that began after P: from P.xmax, or from the cursor once past it.
    const fromXmax = { xid: last.xmax, position: '-1' };
    const lower = paging && afterCursor(paging, fromXmax) ? paging : fromXmax;
    const found = await this.query<{
      snapshot: string;
      xid: string | null;
      position: string;
      id: string | null;
      type: EventType;
      subjectId: string;
      sequence: number;
      userId: string | null;
      payload: string;
    }>('outbox_batch', OUTBOX_BATCH_SQL, [
      lower.xid,
      last.xip,
      paging?.snapshot.text ?? null,
      lower.position,
      paging?.xid ?? null,
      paging?.position ?? '0',
      this.batch,
    ]);
    if (this.last !== last || this.paging !== paging) return false; // detached meanwhile
    const snapshot = paging?.snapshot ?? parseSnapshot(found[0]!.snapshot);
    const rows = found.filter((r) => r.id !== null);
    const tail = rows.at(-1);
    if (rows.length >= this.batch && tail) {
      this.paging = { snapshot, xid: tail.xid!, position: tail.position };
    } else {
      this.last = snapshot;
      this.paging = undefined;
    }
    const mine: OutboxRow[] = [];
    for (const r of rows) {
      if (r.userId !== null && this.interested(r.userId)) {
        mine.push({ id: r.id!, type: r.type, subjectId: r.subjectId, sequence: Number(r.sequence), userId: r.userId, payload: r.payload });
      }
    }
    this.onRead?.(rows.length);
    if (mine.length > 0) this.deliver(mine);
    return this.paging !== undefined;
  }

  /** Stops reading and waits for a read in progress. */
  stop(): Promise<void> {
    return this.poll.stop();
  }
}
