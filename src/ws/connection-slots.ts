import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { PollLoop } from '../background/poll-loop.js';

/** How a socket's place is held: its row in `ws_connections`, renewed by its instance. */
export interface ConnectionSlot {
  readonly id: string;
  readonly userId: string;
}

export interface ConnectionSlotsOptions {
  /** Sockets one user may hold across every process and instance on the database. */
  maxPerUser: number;
  /** How long a place outlives its instance's last renewal (a crashed process's places free themselves after it). */
  leaseMs: number;
  log: Logger;
}

/**
 * The per-user WebSocket connection limit (`WS_MAX_CONNECTIONS_PER_USER`, SPEC §14), held in
 * PostgreSQL so that it counts every socket of the user on every process and instance on the
 * database. Each acknowledged socket holds one row of `ws_connections` (an UNLOGGED table: the
 * places are ephemeral) with a lease:
 * - `claim` takes a place under a per-user transaction-scoped advisory lock, counting only
 *   unexpired places, so two instances never both admit the user's last place;
 * - `release` deletes the row when the socket closes, for whatever reason;
 * - each instance renews the leases of all its places with one statement every third of the
 *   lease (`renew`), whatever the number of sockets; a process that dies (kill -9, a lost
 *   machine) stops renewing, and its places stop counting when their leases run out;
 * - a place whose row vanished while its socket is still open (the lease ran out while the
 *   database was unreachable) is claimed again at the next renewal; when the user is at the
 *   limit by then, `onLost` closes that socket.
 */
export class ConnectionSlots {
  /** This instance's id in `ws_connections.instance_id`. */
  readonly instanceId = randomUUID();
  private readonly held = new Map<string, { slot: ConnectionSlot; onLost: () => void }>();
  private readonly renewal: PollLoop;
  private readonly releasing = new Set<Promise<void>>();

  constructor(
    private readonly forkEm: () => EntityManager,
    private readonly opts: ConnectionSlotsOptions,
  ) {
    this.renewal = new PollLoop(
      async () => {
        await this.renew();
        return false;
      },
      Math.max(50, Math.floor(opts.leaseMs / 3)),
      (err) => opts.log.warn({ err: { message: (err as Error).message } }, 'renewing WebSocket connection leases failed'),
    );
  }

  /** Places this instance holds now. */
  get size(): number {
    return this.held.size;
  }

  /** Starts renewing this instance's leases (every third of a lease). */
  start(): void {
    this.renewal.start({ now: false });
  }

  /**
   * Takes one of the user's places for a socket, or answers undefined when the user already
   * holds `maxPerUser` unexpired places anywhere. `onLost` runs if the place is lost later.
   */
  async claim(userId: string, onLost: () => void): Promise<ConnectionSlot | undefined> {
    const slot = { id: randomUUID(), userId };
    if (!(await this.insert(slot))) {
      // A socket of this instance that just closed may not have given its place back yet (the
      // release runs after the close): an app reconnecting at once must not be refused for it.
      if (this.releasing.size === 0) return undefined;
      await Promise.all(this.releasing);
      if (!(await this.insert(slot))) return undefined;
    }
    this.held.set(slot.id, { slot, onLost });
    return slot;
  }

  /** Gives a place back (its socket closed). Never throws: a place not deleted expires with its lease. */
  release(slot: ConnectionSlot): Promise<void> {
    this.held.delete(slot.id);
    const done = this.forkEm()
      .execute('delete from ws_connections where id = ?', [slot.id])
      .then(
        () => undefined,
        (err: unknown) => this.opts.log.warn({ err: { message: (err as Error).message } }, 'releasing a WebSocket connection place failed; its lease will expire'),
      )
      .finally(() => this.releasing.delete(done));
    this.releasing.add(done);
    return done;
  }

  /**
   * Renews every place of this instance (one statement) and claims again the places whose rows are gone; a socket that cannot have its
   * place back is closed through its `onLost`.
   */
  async renew(): Promise<void> {
    // Only places claimed before the renewal starts: a claim committing meanwhile is not missing.
    const before = [...this.held];
    // An instance without sockets has nothing to renew (expired places of every instance are the
    // leader's maintenance, src/maintenance.ts).
    if (before.length === 0) return;
    const em = this.forkEm();
    const rows = await em.execute<Array<{ id: string }>>(
      `update ws_connections set expires_at = now() + make_interval(secs => ?) where instance_id = ? returning id`,
      [this.opts.leaseMs / 1000, this.instanceId],
    );
    const renewed = new Set(rows.map((r) => r.id));
    for (const [id, { slot, onLost }] of before) {
      if (renewed.has(id) || !this.held.has(id)) continue;
      if (!(await this.insert(slot))) {
        this.held.delete(id);
        onLost();
      }
    }
  }

  /** Stops renewing and gives back every place this instance still holds. */
  async stop(): Promise<void> {
    await this.renewal.stop();
    await Promise.all(this.releasing);
    this.held.clear();
    try {
      await this.forkEm().execute('delete from ws_connections where instance_id = ?', [this.instanceId]);
    } catch (err) {
      this.opts.log.warn({ err: { message: (err as Error).message } }, 'releasing WebSocket connection places failed; their leases will expire');
    }
  }

  /** Inserts the place if the user holds fewer than the limit; one transaction under the user's advisory lock. */
  private async insert(slot: ConnectionSlot): Promise<boolean> {
    return this.forkEm().transactional(async (em) => {
      // Concurrent claims of one user (on any instance) take turns here; other users do not wait.
      await em.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`ws_connections:${slot.userId}`]);
      const inserted = await em.execute<Array<{ id: string }>>(
        `insert into ws_connections (id, user_id, instance_id, expires_at)
         select ?, ?, ?, now() + make_interval(secs => ?)
          where (select count(*) from ws_connections where user_id = ? and expires_at >= now()) < ?
         on conflict (id) do nothing
         returning id`,
        [slot.id, slot.userId, this.instanceId, this.opts.leaseMs / 1000, slot.userId, this.opts.maxPerUser],
      );
      return inserted.length === 1;
    });
  }
}

