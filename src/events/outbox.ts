import type { EntityManager } from '@mikro-orm/postgresql';
import type { EventSubscriber, TransactionEventArgs } from '@mikro-orm/core';
import type { Logger } from 'pino';
import { PollLoop } from '../background/poll-loop.js';
import type { PaymentRequest } from '../payment-requests/payment-request.entity.js';
import type { Transaction } from '../transactions/transaction.entity.js';
import { eventPayload, newEventId, type EventPayload, type EventType } from './events.js';
import { queueDeliveriesSql } from './webhook-queue.js';

/*
 * The outbox: every state change writes its event row (`events`) in the change's own database
 * transaction, and readers take what committed since their last read. Write and read are here;
 * the payload format is in events.ts, the webhook queueing in webhook-queue.ts.
 */

// ---------------------------------------------------------------------------------------------
// Write
// ---------------------------------------------------------------------------------------------

/** What a state change tells the outbox. */
export interface EventFacts {
  type: EventType;
  paymentRequest: PaymentRequest;
  transaction?: Transaction | undefined;
  /** The wallet's owner, when the writer knows it: this process then hands the event to its own subscribers at commit. */
  userId?: string | undefined;
}

/** An event as it was written, for the hand-off to this process's subscribers after the commit. */
export interface WrittenEvent {
  id: string;
  type: EventType;
  paymentRequestId: string;
  sequence: number;
  userId: string | undefined;
  payload: EventPayload;
}

/** What one committed transaction wrote to the outbox. */
export interface CommittedEvents {
  events: WrittenEvent[];
  /** Whether it queued webhook deliveries (the delivery workers are woken only then). */
  deliveries: boolean;
}

/** The events each open transaction wrote, keyed by the transaction (the ORM's, or `runInTransaction`'s token). */
const written = new WeakMap<object, CommittedEvents>();

/** Records events written in `trx`, announced by `OutboxCommits` once the transaction commits. */
export function recordWritten(trx: object, events: readonly WrittenEvent[], deliveries: boolean): void {
  const entry = written.get(trx);
  if (entry) {
    entry.events.push(...events);
    entry.deliveries ||= deliveries;
  } else {
    written.set(trx, { events: [...events], deliveries });
  }
}

/** The events a committed transaction wrote (and forgets them), or undefined when it wrote none. */
export function takeWritten(trx: object): CommittedEvents | undefined {
  const entry = written.get(trx);
  written.delete(trx);
  return entry;
}

/**
 * The transaction a nested one (a savepoint of `em.transactional` inside another) belongs to: the
 * ORM marks it with a symbol named `parentTransaction` (and runs commit hooks for the outermost
 * one only).
 */
function parentOf(trx: object): object | undefined {
  const symbol = Object.getOwnPropertySymbols(trx).find((s) => s.description === 'parentTransaction');
  return symbol ? ((trx as Record<symbol, object | undefined>)[symbol] ?? undefined) : undefined;
}

/**
 * Where the events written in `trx` are announced: the outermost transaction's commit. Events
 * written in a savepoint are not handed over at commit (the savepoint may have been rolled back
 * while the transaction committed); the commit only wakes the readers, which bring them.
 */
export function recordFor(trx: object, events: readonly WrittenEvent[], deliveries: boolean): void {
  let root = trx;
  for (let parent = parentOf(root); parent; parent = parentOf(root)) root = parent;
  recordWritten(root, root === trx ? events : [], deliveries);
}

/**
 * Calls `onCommit` after each committed transaction that wrote events (the ORM's after-commit
 * event, which it dispatches for outermost transactions only; `runInTransaction` in
 * src/db/prepared.ts dispatches the same event).
 */
export class OutboxCommits implements EventSubscriber {
  constructor(private readonly onCommit: (committed: CommittedEvents) => void) {}

  afterTransactionCommit(args: TransactionEventArgs): void {
    const trx = args.transaction as object | undefined;
    const committed = trx ? takeWritten(trx) : undefined;
    if (committed) this.onCommit(committed);
  }

  afterTransactionRollback(args: TransactionEventArgs): void {
    const trx = args.transaction as object | undefined;
    if (trx) written.delete(trx);
  }
}

/**
 * Writes one outbox row per state change inside the caller's database transaction (`tem` must be
 * in one): the event exists if and only if the change commits. In the same statement, a pending
 * delivery is queued for each of the developer's endpoints that want it (webhook-queue.ts). The
 * per-request `sequence` is the next after the request's previous event; the request's row lock
 * (held by every transition) serialises it, and a transaction event takes that lock itself.
 */
export async function writeEvents(tem: EntityManager, facts: readonly EventFacts[]): Promise<EventPayload[]> {
  const trx = tem.getTransactionContext() as object | undefined;
  if (!trx) throw new Error('writeEvents must run inside a database transaction');
  if (facts.length === 0) return [];
  const now = new Date();
  const rows = facts.map((f) => {
    const payload = eventPayload(newEventId(now.getTime()), f.type, now, f.paymentRequest, f.transaction);
    return {
      id: payload.id,
      type: f.type,
      developer_id: f.paymentRequest.developerId,
      payment_request_id: f.paymentRequest.id,
      transaction_id: f.transaction?.id ?? null,
      payload,
      created_at: payload.createdAt,
    };
  });
  const needsLock = facts.filter((f) => !f.type.startsWith('payment_request.')).map((f) => f.paymentRequest.id);
  if (needsLock.length > 0) {
    await tem.execute('select 1 from payment_requests where id = any(array[?]::uuid[]) for update', [needsLock]);
  }
  const inserted = await tem.execute<Array<{ id: string; sequence: number; deliveries: number }>>(
    `with ev as (
       insert into events (id, type, developer_id, payment_request_id, transaction_id, sequence, payload, created_at)
       select x.id, x.type, x.developer_id, x.payment_request_id, x.transaction_id,
              (select coalesce(max(e.sequence), 0) + 1 from events e where e.payment_request_id = x.payment_request_id),
              x.payload, x.created_at
         from jsonb_to_recordset(?::jsonb) as x(id text, type text, developer_id uuid, payment_request_id uuid,
                                                transaction_id uuid, payload jsonb, created_at timestamptz)
       returning id, type, developer_id, payment_request_id, payout_id, sequence),
     queued as (${queueDeliveriesSql('ev')})
     select ev.id, ev.sequence, (select count(*) from queued)::int as deliveries from ev`,
    [JSON.stringify(rows)],
  );
  const sequenceOf = new Map(inserted.map((r) => [r.id, Number(r.sequence)]));
  recordFor(
    trx,
    rows.map((r, i) => ({
      id: r.id,
      type: r.type,
      paymentRequestId: r.payment_request_id,
      sequence: sequenceOf.get(r.id)!,
      userId: facts[i]!.userId,
      payload: r.payload,
    })),
    (inserted[0]?.deliveries ?? 0) > 0,
  );
  return rows.map((r) => r.payload);
}

/**
 * The first event of a request just inserted (by the same statement: `payment_request.created`,
 * sequence 1), as CTEs to append to that statement's WITH list: `ev` inserts the event row and
 * `queued` the webhook deliveries (count its rows to know whether any were queued). Parameters
 * are SQL references: the event id, its payload (JSON text) and timestamp; `pr` is the CTE that
 * returned the new request's id and developer_id. The caller records the event with
 * `recordWritten` (see `firstEvent`).
 */
export function firstEventSql(p: { pr: string; id: string; payload: string; createdAt: string }): string {
  return `ev as (
       insert into events (id, type, developer_id, payment_request_id, transaction_id, sequence, payload, created_at)
       select ${p.id}, 'payment_request.created', ${p.pr}.developer_id, ${p.pr}.id, null, 1, ${p.payload}::jsonb, ${p.createdAt}::timestamptz
         from ${p.pr}
       returning id, type, developer_id, payment_request_id, payout_id, sequence),
     queued as (${queueDeliveriesSql('ev')})`;
}

/** The first event of a request (see `firstEventSql`): its id, payload and what the commit hands over. */
export function firstEvent(paymentRequest: PaymentRequest, userId: string | undefined, at: Date): WrittenEvent {
  const payload = eventPayload(newEventId(), 'payment_request.created', at, paymentRequest);
  return { id: payload.id, type: payload.type, paymentRequestId: paymentRequest.id, sequence: 1, userId, payload };
}

/** One state change's event (see `writeEvents`). */
export async function writeEvent(tem: EntityManager, facts: EventFacts): Promise<EventPayload> {
  const [payload] = await writeEvents(tem, [facts]);
  return payload!;
}

// ---------------------------------------------------------------------------------------------
// Read
// ---------------------------------------------------------------------------------------------

/** An outbox row as readers need it: the event, whose wallet it concerns, and its payload as JSON text. */
export interface OutboxRow {
  id: string;
  type: EventType;
  paymentRequestId: string;
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
       e.payment_request_id as "paymentRequestId", e.sequence, w.user_id as "userId", e.payload::text as payload
  from (select pg_current_snapshot()::text as snapshot) s
  left join lateral (
    (select x.xid, x.position, x.id, x.type, x.payment_request_id, x.sequence, x.payload from events x
      where x.xid = any($2::xid8[]) and ($5::xid8 is null or (x.xid, x.position) > ($5::xid8, $6::bigint))
        and ($3::pg_snapshot is null or pg_visible_in_snapshot(x.xid, $3::pg_snapshot)))
    union all
    (select x.xid, x.position, x.id, x.type, x.payment_request_id, x.sequence, x.payload from events x
      where (x.xid, x.position) > ($1::xid8, $4::bigint)
        and ($3::pg_snapshot is null or pg_visible_in_snapshot(x.xid, $3::pg_snapshot))
      order by x.xid, x.position limit $7)
    order by 1, 2 limit $7
  ) e on true
  left join payment_requests pr on pr.id = e.payment_request_id
  left join wallets w on w.id = pr.wallet_id
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
      paymentRequestId: string;
      sequence: number;
      userId: string;
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
        mine.push({ id: r.id!, type: r.type, paymentRequestId: r.paymentRequestId, sequence: Number(r.sequence), userId: r.userId, payload: r.payload });
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
