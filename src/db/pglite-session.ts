import type { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

// This file is also loaded, as TypeScript, by the test environment (test/helpers/environment.js,
// with Node's type stripping): erasable syntax only, and no imports of the project's modules.

/** Wire-protocol message types that end a unit of work of one connection (then ReadyForQuery). */
const SYNC = 0x53; // 'S'
const QUERY = 0x51; // 'Q'
const TERMINATE = 0x58; // 'X'
const SYNC_MESSAGE = new Uint8Array([SYNC, 0, 0, 0, 4]);

interface Pending {
  handlerId: number;
  /** The message, or null for a connection's release after it went away. */
  message: Uint8Array | null;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (err: unknown) => void;
}

/**
 * PGlite is one PostgreSQL session; pglite-socket lets several connections share it through one
 * queue of wire-protocol messages. Its own queue (0.2.17) pins the session to a connection only
 * while a transaction is open, so two connections' extended-protocol batches (Parse, Bind,
 * Execute, Sync) interleave on the one unnamed statement, and a message that throws leaves the
 * queue stopped for good (electric-sql/pglite#1046, #977): concurrent CLI runs beside a gateway
 * hung. This queue gives the session to one connection from its first message until it is back
 * at ReadyForQuery outside a transaction (a Sync or a simple Query with no transaction open), keeps
 * going after a failed message, and on a disconnect ends what the connection left half done.
 */
export class SessionQueue {
  private readonly db: PGlite;
  private readonly queue: Pending[] = [];
  /** The connection that holds the session (mid-batch or in a transaction), if any. */
  private owner: number | null = null;
  private running = false;

  constructor(db: PGlite) {
    this.db = db;
  }

  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue.push({ handlerId, message, onData, resolve, reject });
      void this.drain();
    });
  }

  getQueueLength(): number {
    return this.queue.length;
  }

  /** A connection went away: its queued messages fail. */
  clearQueueForHandler(handlerId: number): void {
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const p = this.queue[i]!;
      if (p.handlerId !== handlerId || p.message === null) continue;
      this.queue.splice(i, 1);
      p.reject(new Error('Handler disconnected'));
    }
  }

  /**
   * A connection went away: once its messages in flight are done, if it holds the session, end its
   * half-done batch and roll back its transaction (queued in turn, so nothing of it runs after).
   */
  clearTransactionIfNeeded(handlerId: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ handlerId, message: null, onData: () => undefined, resolve: () => resolve(), reject });
      void this.drain();
    });
  }

  private async release(): Promise<void> {
    // (`exec` takes PGlite's query lock itself: not inside `runExclusive`.)
    await this.db.runExclusive(() => this.db.execProtocolRaw(SYNC_MESSAGE)).catch(() => undefined);
    if (this.db.isInTransaction()) await this.db.exec('ROLLBACK').catch(() => undefined);
  }

  private next(): Pending | undefined {
    if (this.owner === null) return this.queue.shift();
    const i = this.queue.findIndex((p) => p.handlerId === this.owner);
    return i === -1 ? undefined : this.queue.splice(i, 1)[0];
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (let p = this.next(); p; p = this.next()) {
        const message = p.message;
        // A connection's release (it went away) or its Terminate: what it holds is given back.
        if (message === null || message[0] === TERMINATE) {
          if (this.owner === p.handlerId) {
            await this.release();
            this.owner = null;
          }
          p.resolve(0);
          continue;
        }
        let bytes = 0;
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(message, {
              onRawData: (data: Uint8Array) => {
                bytes += data.length;
                p.onData(data);
              },
            }),
          );
          p.resolve(bytes);
        } catch (err) {
          p.reject(err);
        }
        this.owner = this.holds(message) ? p.handlerId : null;
      }
    } finally {
      this.running = false;
    }
  }

  /** Whether the connection still holds the session after this message. */
  private holds(message: Uint8Array): boolean {
    const type = message[0];
    // A startup message has no type byte (its length's first byte is 0) and completes at once.
    if (type === 0) return false;
    if (type === SYNC || type === QUERY) return this.db.isInTransaction();
    return true;
  }
}

/** A pglite-socket server on `db` whose connections take turns through a `SessionQueue`. */
export function sessionServer(db: PGlite, options: { host: string; port: number; maxConnections: number }): PGLiteSocketServer {
  const server = new PGLiteSocketServer({ db, ...options });
  // The handlers take the server's queue when they connect: replaced before `start()`.
  (server as unknown as { queryQueue: SessionQueue }).queryQueue = new SessionQueue(db);
  return server;
}
