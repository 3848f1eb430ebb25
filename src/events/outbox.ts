import type { EntityManager } from '@mikro-orm/postgresql';
import type { EventSubscriber, TransactionEventArgs } from '@mikro-orm/core';
import type { PaymentRequest } from '../payment-requests/payment-request.entity.js';
import type { Transaction } from '../transactions/transaction.entity.js';
import { eventPayload, newEventId, type EventPayload, type EventType } from './events.js';
import { queueDeliveriesSql } from './webhook-queue.js';

/*
 * The outbox: every state change writes its event row (`events`) in the change's own database
 * transaction, and readers take what committed since their last read. The write is here, the
 * read in outbox-reader.ts; the payload format is in events.ts, the webhook queueing in
 * webhook-queue.ts.
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
function recordFor(trx: object, events: readonly WrittenEvent[], deliveries: boolean): void {
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
       returning id, type, developer_id, payment_request_id, sequence),
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
       returning id, type, developer_id, payment_request_id, sequence),
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

// The read side (OutboxReader and its statement) is outbox-reader.ts.
