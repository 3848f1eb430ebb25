import type { EntityManager } from '@mikro-orm/postgresql';
import { inline, type Connection, type Queryable, type SimpleStatement, type SqlPool, type Statement } from './sql.js';

/**
 * An outbox row as its writer hands it over after the commit (src/events builds and reads them;
 * the unit of work only carries them from the transaction that wrote them to the commit listener).
 */
export interface OutgoingEvent {
  readonly id: string;
  readonly type: string;
  /** What the event is about (a payment request, a payout); events of one subject are in `sequence` order. */
  readonly subjectId: string;
  readonly sequence: number;
  /** The wallet user the event concerns (the app's subscriptions), or null. */
  readonly userId: string | null;
  readonly payload: unknown;
}

/** What one committed transaction wrote to the outbox. */
export interface Committed {
  readonly events: readonly OutgoingEvent[];
  /** Whether it queued webhook deliveries (the delivery workers are woken only then). */
  readonly deliveries: boolean;
}

/** Told about every committed transaction that wrote events (this instance's event hub). */
export type CommitListener = (committed: Committed) => void;

/** An open database transaction of a unit of work: statements run in it, and what it wrote is published after its commit. */
export interface Tx extends Queryable {
  /** Records outbox rows this transaction wrote (src/events `appendEvents`): published once it commits. */
  wrote(events: readonly OutgoingEvent[], deliveries: boolean): void;
  /** Runs `fn` after the commit (never after a rollback). */
  afterCommit(fn: () => void): void;
}

/**
 * Statements a transaction sends in the same round trip as its BEGIN and its COMMIT (PostgreSQL's
 * simple protocol: one message, values inlined as literals, parsed per call). Each round trip
 * costs both sides a write and a wake-up (on two cores, the largest part of a create's CPU), so a
 * door's statements around an operation (the Idempotency-Key's claim and record) ride on the two
 * round trips the transaction makes anyway.
 */
export interface TransactionEnds<T> {
  /** Runs right after BEGIN; its rows are handed to the body. */
  readonly begin?: SimpleStatement;
  /** Built from the body's result, runs right before COMMIT (nothing when undefined). */
  readonly commit?: (result: T) => SimpleStatement | undefined;
  /**
   * Runs on its own when the body fails after `UnitOfWork.outside` committed the transaction
   * early (nothing can be rolled back then): e.g. the release of an Idempotency-Key's claim.
   */
  readonly abandon?: SimpleStatement;
}

/** One open transaction: its connection, what it wrote, what runs after its commit. */
class OpenTransaction implements Tx {
  readonly events: OutgoingEvent[] = [];
  deliveries = false;
  readonly callbacks: Array<() => void> = [];
  /** Transaction bodies of this unit of work running inside it (joined), besides the outermost. */
  joined = 0;
  /** Committed by `UnitOfWork.outside` before the outermost body ended. */
  endedEarly = false;
  private closed = false;

  constructor(
    private readonly pool: SqlPool,
    readonly connection: Connection,
  ) {}

  run<Row>(statement: Statement<Row>, values: readonly unknown[]): Promise<Row[]> {
    this.usable();
    return this.pool.exec<Row>(this.connection, statement.name, statement.text, values);
  }

  query<Row = Record<string, unknown>>(text: string, values: readonly unknown[] = []): Promise<Row[]> {
    this.usable();
    return this.pool.exec<Row>(this.connection, undefined, text, values);
  }

  wrote(events: readonly OutgoingEvent[], deliveries: boolean): void {
    this.usable();
    this.events.push(...events);
    this.deliveries ||= deliveries;
  }

  afterCommit(fn: () => void): void {
    this.usable();
    this.callbacks.push(fn);
  }

  close(): void {
    this.closed = true;
  }

  private usable(): void {
    if (this.closed) throw new Error('this transaction has ended');
  }
}

/**
 * The work of one operation (a door's call, one pass of a background job), opened by whoever
 * starts it and passed by hand to the services it calls. It carries the operation's database
 * transaction while one is open: `run`/`query` go into that transaction, else to the pool (each
 * statement its own transaction); `transaction` opens one (or runs inside the one open: a door
 * that wraps an operation, the Idempotency-Key's record or an admin mutation's audit row, makes
 * the operation's writes part of its own transaction); what a transaction wrote to the outbox is
 * handed to the commit listener after it commits. A service's signature says what it needs: a
 * `Tx` (it writes inside a transaction its caller opened), a `Queryable` (it reads), or the
 * `UnitOfWork` (it opens its own transactions).
 */
export class UnitOfWork implements Queryable {
  private open: OpenTransaction | undefined;
  private orm: EntityManager | undefined;

  constructor(
    private readonly pool: SqlPool,
    private readonly onCommit: CommitListener,
    private readonly forkEm: () => EntityManager,
  ) {}

  /**
   * An EntityManager of this operation, for the ORM's reads (the internal tools' lists and their
   * batch loaders). It runs on the pool, outside any transaction of this unit of work: never use
   * it for a write, or while a transaction is open (it would not see that transaction's writes,
   * and on the embedded database's single connection it would wait for it forever).
   */
  get em(): EntityManager {
    if (this.open) throw new Error('the ORM reads outside the unit of work: not while a transaction is open');
    return (this.orm ??= this.forkEm());
  }

  run<Row>(statement: Statement<Row>, values: readonly unknown[]): Promise<Row[]> {
    return (this.open ?? this.pool).run(statement, values);
  }

  query<Row = Record<string, unknown>>(text: string, values: readonly unknown[] = []): Promise<Row[]> {
    return (this.open ?? this.pool).query<Row>(text, values);
  }

  /**
   * Runs `body` in one database transaction: BEGIN, the body's statements, COMMIT, each one round
   * trip, on one pooled connection (`ends` add statements to the BEGIN and COMMIT round trips).
   * Any error rolls back and is rethrown; a session that lost the driver's prepared statements
   * runs the body once more, unnamed. Inside a transaction already open on this unit of work the
   * body runs in it (its `ends` statements run as ordinary ones): the outermost commits or rolls
   * back everything. After the commit the events written are handed to the commit listener and
   * the `afterCommit` callbacks run.
   */
  async transaction<T>(body: (tx: Tx, begun: unknown[]) => Promise<T>, ends: TransactionEnds<T> = {}): Promise<T> {
    const open = this.open;
    if (open) return this.joined(open, body, ends);
    for (;;) {
      const connection = await this.pool.acquire();
      const tx = new OpenTransaction(this.pool, connection);
      this.open = tx;
      let result: T;
      let released = false;
      try {
        try {
          const begun = ends.begin
            ? await this.pool.simple<unknown>(connection, `begin; ${inline(ends.begin)}`, `begin; ${ends.begin.text}`)
            : (await this.pool.simple<unknown>(connection, 'begin', 'begin'), []);
          result = await body(tx, begun);
          const last = ends.commit?.(result);
          if (tx.endedEarly) {
            if (last) await this.pool.query(last.text, last.values);
            return result;
          }
          await this.pool.simple(connection, last ? `${inline(last)}; commit` : 'commit', last ? `${last.text}; commit` : 'commit');
        } catch (err) {
          if (tx.endedEarly) {
            if (ends.abandon) await this.pool.query(ends.abandon.text, ends.abandon.values).catch(() => undefined);
            throw err;
          }
          // Also after a failed BEGIN message (its statement ran inside the block): nothing stays open.
          await this.pool.simple(connection, 'rollback', 'rollback').catch(() => undefined);
          if (this.pool.lostSession(err)) continue;
          throw err;
        } finally {
          tx.close();
          if (this.open === tx) this.open = undefined;
        }
      } finally {
        if (!tx.endedEarly) {
          released = true;
          await this.pool.release(connection);
        }
      }
      if (released) this.committed(tx);
      return result;
    }
  }

  /**
   * For an effect outside the database (an HTTP request to someone else's server), which must
   * not hold a connection or a transaction while it waits: commits the transaction a door has
   * open around this operation (what it did so far becomes durable and its events go out; see
   * `TransactionEnds.abandon` for a failure after this), then runs `effect` with none open.
   * Called by an operation itself, never from inside a transaction body of its own.
   */
  async outside<T>(effect: () => Promise<T>): Promise<T> {
    const tx = this.open;
    if (tx) {
      if (tx.joined > 0) throw new Error('outside() cannot run inside a transaction body');
      await this.pool.simple(tx.connection, 'commit', 'commit');
      tx.endedEarly = true;
      tx.close();
      this.open = undefined;
      await this.pool.release(tx.connection);
      this.committed(tx);
    }
    return effect();
  }

  private async joined<T>(open: OpenTransaction, body: (tx: Tx, begun: unknown[]) => Promise<T>, ends: TransactionEnds<T>): Promise<T> {
    open.joined++;
    try {
      const begun = ends.begin ? await open.query(ends.begin.text, ends.begin.values) : [];
      const result = await body(open, begun);
      const last = ends.commit?.(result);
      if (last) await open.query(last.text, last.values);
      return result;
    } finally {
      open.joined--;
    }
  }

  private committed(tx: OpenTransaction): void {
    if (tx.events.length > 0 || tx.deliveries) this.onCommit({ events: tx.events, deliveries: tx.deliveries });
    for (const fn of tx.callbacks) fn();
  }
}

/** Opens units of work on one pool, each handing its commits to the same listener. */
export class UnitsOfWork {
  private listener: CommitListener = () => undefined;

  constructor(
    readonly pool: SqlPool,
    private readonly forkEm: () => EntityManager,
  ) {}

  /** Where committed events go (this instance's event hub, set once it exists). */
  onCommit(listener: CommitListener): void {
    this.listener = listener;
  }

  /** A new unit of work (nothing is opened until it runs a statement). */
  begin(): UnitOfWork {
    return new UnitOfWork(this.pool, (committed) => this.listener(committed), this.forkEm);
  }
}
