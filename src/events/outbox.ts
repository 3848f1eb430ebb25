import type { Logger } from 'pino';
import { PollLoop } from '../background/poll-loop.js';
import type { OutboxEventType } from './events.js';

/*
 * The outbox's read side: readers take what committed since their last read, by PostgreSQL
 * snapshots (the write side is append.ts, the payload format events.ts). An instance's LocalFeed
 * (event-hub.ts) reads for its own subscribers; with NATS, the leader's relay reads once for
 * every instance (nats.ts).
 */

/** An outbox row as readers need it: the event, its subject, whose wallet it concerns, and its payload as JSON text. */
export interface OutboxRow {
  id: string;
  type: OutboxEventType;
  subjectId: string;
  sequence: number;
  userId: string;
  /** The payload as JSON text (parsed only by a process with a subscriber for `userId`). */
  payload: string;
  /** The writing transaction's id (xid8 as text): which snapshots see the row. */
  xid: string;
}

/** Runs one prepared statement (by name) and returns its rows. */
export type OutboxQuery = <T>(name: string, text: string, values: readonly unknown[]) => Promise<T[]>;

/** A PostgreSQL snapshot as `pg_current_snapshot()::text` prints it: `xmin:xmax:xip,...`. */
export interface Snapshot {
  readonly text: string;
  readonly xmin: bigint;
  readonly xmax: bigint;
  readonly xip: readonly string[];
}

export function parseSnapshot(text: string): Snapshot {
  const [xmin, xmax, xip] = text.split(':');
  return { text, xmin: BigInt(xmin!), xmax: BigInt(xmax!), xip: xip ? xip.split(',') : [] };
}

/** Whether a transaction's rows are visible in `s` (it committed before `s` was taken): `pg_visible_in_snapshot` for committed rows. */
export function visibleIn(xid: string, s: Snapshot): boolean {
  const x = BigInt(xid);
  if (x >= s.xmax) return false;
  if (x < s.xmin) return true;
  return !s.xip.includes(xid);
}

/** Whether every transaction visible in `a` is visible in `b` (`b` was taken when all of them had committed). */
export function covers(b: Snapshot, a: Snapshot): boolean {
  if (a.xmax > b.xmax) return false;
  // Visible in a: below a.xmax and not in a.xip. Not visible in b: in b.xip (or at/above b.xmax, excluded above).
  return b.xip.every((x) => BigInt(x) >= a.xmax || a.xip.includes(x));
}

export const OUTBOX_BATCH = 1000;

/** Whether (xid, position) `a` comes after `b`. */
function afterCursor(a: { xid: string; position: string }, b: { xid: string; position: string }): boolean {
  const [ax, bx] = [BigInt(a.xid), BigInt(b.xid)];
  return ax !== bx ? ax > bx : BigInt(a.position) > BigInt(b.position);
}

/**
 * Rows in (xid, position) order, with each subject's rows (a payment request's) put in `sequence`
 * order in the places its rows take: two events of one subject whose transactions got their xids
 * in the other order (the later one's transaction began writing first, then waited for the
 * subject's row lock) come in the order they were written, whatever their xids. Other subjects'
 * rows keep their places.
 */
export function inSubjectOrder<T extends { subjectId: string; sequence: number }>(rows: readonly T[]): T[] {
  const bySubject = new Map<string, T[]>();
  for (const r of rows) {
    const list = bySubject.get(r.subjectId);
    if (list) list.push(r);
    else bySubject.set(r.subjectId, [r]);
  }
  for (const list of bySubject.values()) if (list.length > 1) list.sort((a, b) => a.sequence - b.sequence);
  const next = new Map<string, number>();
  return rows.map((r) => {
    const i = next.get(r.subjectId) ?? 0;
    next.set(r.subjectId, i + 1);
    return bySubject.get(r.subjectId)![i]!;
  });
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

/** What a read hands over: the rows (of interested users), and the snapshots it read between. */
export interface OutboxBatch {
  rows: OutboxRow[];
  /** The snapshot the previous batch ended at (P). */
  from: Snapshot;
  /** The snapshot this batch ends at (S); undefined for a page of a batch read in pages (more to come). */
  to: Snapshot | undefined;
}

export interface OutboxReaderOptions {
  query: OutboxQuery;
  log: Logger;
  /** Milliseconds between polls; a function is read before each wait (a reader that polls faster while busy). */
  intervalMs: number | (() => number);
  /** Whether a user has listeners (other users' rows are skipped). */
  interested: (userId: string) => boolean;
  /** Whether anyone listens (else the reader stays idle). */
  anyInterest: () => boolean;
  /**
   * Takes a batch; the reader goes on from its end once this resolves, and reads the same rows
   * again when it rejects (the NATS relay: published, or not).
   */
  deliver: (batch: OutboxBatch) => void | Promise<void>;
  /** Called after each read with how many rows it read (the lag metric's hook). */
  onRead?: (rows: number) => void;
  /** Rows per read at most (a larger batch is read in pages of one snapshot). */
  batch?: number;
  /** Name of the log line when a read fails. */
  what?: string;
}

/**
 * A reader of the outbox. While no one listens it reads nothing; `attach` takes a snapshot to
 * start from (or `resumeFrom` names one), and from then on every batch is the snapshot
 * difference above, so no row is skipped or read twice whatever order transactions commit in.
 * It reads on a wake-up (a commit here, a hint) and every `intervalMs`; at most one read runs at a
 * time, and wake-ups during a read cause one more read.
 */
export class OutboxReader {
  /** The snapshot the last batch ended at; undefined while idle (no one listens). */
  private last: Snapshot | undefined;
  /** A batch read in pages: its snapshot and the last row handed over. */
  private paging: { snapshot: Snapshot; xid: string; position: string } | undefined;
  private readonly poll: PollLoop;
  private attaching: Promise<void> | undefined;
  private readonly batch: number;
  /** Whether the last read failed (a database outage): the feed reports it as not healthy. */
  failing = false;

  constructor(private readonly opts: OutboxReaderOptions) {
    this.batch = opts.batch ?? OUTBOX_BATCH;
    this.poll = new PollLoop(() => this.readOnce(), opts.intervalMs, (err) => {
      this.failing = true;
      opts.log.warn({ err: { message: (err as Error).message } }, opts.what ?? 'outbox read failed; retrying');
    });
  }

  /** Starts polling (`poll: false`: reads on wake-ups only). */
  start(poll = true): void {
    this.poll.start({ now: false, poll });
  }

  /** Something may have committed: read soon. */
  wake(): void {
    this.poll.wake();
  }

  /** Turns the interval's reads on or off (wake-ups read either way). */
  setPolling(on: boolean): void {
    this.poll.setPolling(on);
  }

  /** The snapshot the reader has read up to (undefined while idle). */
  get position(): Snapshot | undefined {
    return this.paging ? undefined : this.last;
  }

  /** Goes on from `snapshot` (a position kept elsewhere: the NATS stream, a fallback's coverage). */
  resumeFrom(snapshot: Snapshot): void {
    this.last = snapshot;
    this.paging = undefined;
  }

  /**
   * Resolves once events committed from now on reach `deliver` (for users `interested` in them):
   * at once while the reader runs, else after it took the snapshot it starts from.
   */
  attach(): Promise<void> {
    if (this.last) return Promise.resolve();
    this.attaching ??= (async () => {
      try {
        const [row] = await this.opts.query<{ snapshot: string }>('outbox_snapshot', SNAPSHOT_SQL, []);
        this.last ??= parseSnapshot(row!.snapshot);
        this.paging = undefined;
      } finally {
        this.attaching = undefined;
      }
    })();
    return this.attaching;
  }

  /** Forgets its position (no one listens any more); the next `attach` starts from then. */
  detach(): void {
    this.last = undefined;
    this.paging = undefined;
  }

  /** Reads one batch (or page) and hands it over; true when a full page was read (more to come). */
  async readOnce(): Promise<boolean> {
    if (!this.opts.anyInterest()) {
      this.detach();
      this.failing = false;
      this.opts.onRead?.(0); // idle: nothing to read is no lag
      return false;
    }
    const last = this.last;
    if (!last) {
      // Someone listens but no snapshot was taken (the database was down at `attach`): start now.
      await this.attach();
      this.failing = false;
      return false;
    }
    const paging = this.paging;
    // Rows of transactions that began after P: from P.xmax, or from the cursor once past it.
    const fromXmax = { xid: last.xmax.toString(), position: '-1' };
    const lower = paging && afterCursor(paging, fromXmax) ? paging : fromXmax;
    const found = await this.opts.query<{
      snapshot: string;
      xid: string | null;
      position: string;
      id: string | null;
      type: OutboxEventType;
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
    this.failing = false;
    if (this.last !== last || this.paging !== paging) return false; // detached or moved meanwhile
    const snapshot = paging?.snapshot ?? parseSnapshot(found[0]!.snapshot);
    const rows = found.filter((r) => r.id !== null);
    const tail = rows.at(-1);
    const more = rows.length >= this.batch && tail !== undefined;
    const mine: OutboxRow[] = [];
    for (const r of rows) {
      if (r.userId !== null && this.opts.interested(r.userId)) {
        mine.push({ id: r.id!, type: r.type, subjectId: r.subjectId, sequence: Number(r.sequence), userId: r.userId, payload: r.payload, xid: r.xid! });
      }
    }
    this.opts.onRead?.(rows.length);
    await this.opts.deliver({ rows: inSubjectOrder(mine), from: last, to: more ? undefined : snapshot });
    if (this.last !== last || this.paging !== paging) return false; // moved while delivering
    if (more) {
      this.paging = { snapshot, xid: tail.xid!, position: tail.position };
    } else {
      this.last = snapshot;
      this.paging = undefined;
    }
    return more;
  }

  /** Stops reading and waits for a read in progress. */
  stop(): Promise<void> {
    return this.poll.stop();
  }
}
