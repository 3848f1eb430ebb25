import { randomUUID } from 'node:crypto';
import { connect, headers, nanos, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { DeliverPolicy, DiscardPolicy, RetentionPolicy, StorageType, jetstream, jetstreamManager, type JsMsg, type JetStreamClient } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { PollLoop } from '../background/poll-loop.js';
import type { LeaderTask } from '../background/leader-work.js';
import type { OutboxEventType } from './events.js';
import { BUSY_POLL_MS, type OutboxFeed } from './event-hub.js';
import { OutboxReader, covers, parseSnapshot, visibleIn, type OutboxBatch, type OutboxQuery, type OutboxRow, type Snapshot } from './outbox.js';

/*
 * The fan-out of events over NATS JetStream (NATS_URL). PostgreSQL stays the only truth; the
 * stream is a copy of the outbox that the leader keeps and every instance reads:
 *
 * - The leader's relay (`NatsRelay`, a leader task) reads the outbox once for everyone and
 *   publishes each event to `<NATS_STREAM>.s.u.<userId>` with `Nats-Msg-Id` = the event id (a
 *   republish after a crash or a hand-over is dropped by the stream as a duplicate), then a batch
 *   marker `<NATS_STREAM>.s.batch` = {term, from, to}: every event visible in snapshot `to` and
 *   not in `from` is in the stream before it. Markers also come every second when nothing
 *   happens (the relay's heartbeat). A new leader goes on from the position in the stream's last
 *   message. Commits anywhere wake the relay with a core NATS message `<NATS_STREAM>.hint`.
 * - Every instance (`NatsFeed`) consumes the whole stream with one ordered consumer and hands its
 *   subscribers their users' events. It keeps a coverage snapshot C ("every event visible in C
 *   that a subscriber here wants has been delivered") and follows the markers: a marker whose
 *   batch it received whole (the previous marker of the same relay term came just before, with no
 *   gap in the stream's sequence) and whose `from` C covers moves C to `to`, and the instance is
 *   linked. While it is not linked, NATS is away, or the markers stop (no leader, or the leader
 *   cannot publish), it reads PostgreSQL itself from C (the LocalFeed's reader), and events come
 *   from there; an event is delivered once, from whichever source brings it first, with the
 *   other source skipping it (by its transaction's visibility in C, or by its id).
 *
 * Subjects are per user: the subject names the audience, an instance could subscribe to just its
 * users' subjects (NATS 2.10 takes a list of filters per consumer; 2.9, the oldest we support,
 * one), and a request's events (ordered per request) stay in one subject. JetStream keeps the
 * stream's subjects indexed; with MAX_AGE the index holds the users of the last hour.
 */

/** How long the stream keeps events (instances away longer read PostgreSQL instead). */
const MAX_AGE_MS = 60 * 60 * 1000;
/** Republishes within this window are dropped as duplicates (a new leader resumes well inside it). */
const DUPLICATE_WINDOW_MS = 10 * 60 * 1000;
/** A relay publishes a marker at least this often (its heartbeat). */
const MARKER_EVERY_MS = 1000;
/** An instance whose last marker is older than this reads PostgreSQL itself (no leader publishing). */
const MARKER_STALE_MS = 3000;
/** The relay's reads are at least this far apart (under load each read takes a batch): at most 50 a second. */
const RELAY_MIN_GAP_MS = 20;
/** How long a publish may wait for its acknowledgement. */
const PUBLISH_TIMEOUT_MS = 5000;

/** The subjects of one database's events. */
export function subjects(stream: string) {
  return {
    all: `${stream}.s.>`,
    user: (userId: string) => `${stream}.s.u.${userId}`,
    marker: `${stream}.s.batch`,
    hint: `${stream}.hint`,
  };
}

/** A batch marker's body. */
interface Marker {
  term: string;
  from: string;
  to: string;
}

/**
 * One NATS connection per instance: connects in the background (the gateway starts without NATS,
 * and its instances read PostgreSQL until it comes), then reconnects for ever; makes sure the
 * stream exists on every (re)connection.
 */
export class NatsLink {
  private nc: NatsConnection | undefined;
  private js: JetStreamClient | undefined;
  private closed = false;
  private ready = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<(up: boolean) => void>();
  readonly names: ReturnType<typeof subjects>;

  constructor(
    private readonly url: string,
    readonly stream: string,
    private readonly log: Logger,
  ) {
    this.names = subjects(stream);
  }

  /** Connected, with the stream in place. */
  get up(): boolean {
    return this.ready && this.nc !== undefined && !this.nc.isClosed();
  }

  get connection(): NatsConnection | undefined {
    return this.up ? this.nc : undefined;
  }

  get jetstream(): JetStreamClient | undefined {
    return this.up ? this.js : undefined;
  }

  onChange(listener: (up: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  start(): void {
    void this.connect();
  }

  private set(up: boolean): void {
    if (this.ready === up) return;
    this.ready = up;
    this.log[up ? 'info' : 'warn']({ stream: this.stream }, up ? 'NATS connected' : 'NATS away; instances read PostgreSQL meanwhile');
    for (const l of this.listeners) l(up);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers: this.url.split(',').map((s) => s.trim()),
        name: `wallet-gateway-${process.pid}`,
        reconnect: true,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        reconnectJitter: 100,
        pingInterval: 2000,
        maxPingOut: 2,
        timeout: 2000,
      });
    } catch (err) {
      this.log.warn({ err: { message: (err as Error).message } }, 'NATS not reachable; retrying (instances read PostgreSQL meanwhile)');
      this.timer = setTimeout(() => void this.connect(), 1000);
      this.timer.unref();
      return;
    }
    if (this.closed) {
      await nc.close().catch(() => undefined);
      return;
    }
    this.nc = nc;
    this.js = jetstream(nc, { timeout: PUBLISH_TIMEOUT_MS });
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect') this.set(false);
        else if (s.type === 'reconnect') void this.ensureStream();
      }
    })().catch(() => undefined);
    void nc.closed().then(() => {
      if (this.nc !== nc) return;
      this.set(false);
      this.nc = undefined;
      if (!this.closed) {
        this.timer = setTimeout(() => void this.connect(), 1000);
        this.timer.unref();
      }
    });
    await this.ensureStream();
  }

  /** Creates the stream when it is missing (every instance may; the configuration is the same). */
  private async ensureStream(): Promise<void> {
    const nc = this.nc;
    if (!nc || nc.isClosed()) return;
    try {
      const jsm = await jetstreamManager(nc, { timeout: PUBLISH_TIMEOUT_MS });
      try {
        await jsm.streams.info(this.stream);
      } catch {
        await jsm.streams.add({
          name: this.stream,
          subjects: [this.names.all],
          retention: RetentionPolicy.Limits,
          storage: StorageType.File,
          discard: DiscardPolicy.Old,
          max_age: nanos(MAX_AGE_MS),
          duplicate_window: nanos(DUPLICATE_WINDOW_MS),
          num_replicas: 1,
        });
      }
      if (this.nc === nc && !nc.isClosed()) this.set(true);
    } catch (err) {
      this.log.warn({ err: { message: (err as Error).message } }, 'NATS stream not ready; retrying');
      this.timer = setTimeout(() => void this.ensureStream(), 1000);
      this.timer.unref();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.ready = false;
    const nc = this.nc;
    this.nc = undefined;
    await nc?.drain().catch(() => nc.close().catch(() => undefined));
  }
}

/** The headers an event carries beside its payload (the body), so an instance routes it without parsing. */
const H = {
  type: 'Outbox-Type',
  subject: 'Outbox-Subject',
  sequence: 'Outbox-Sequence',
  user: 'Outbox-User',
  xid: 'Outbox-Xid',
  from: 'Outbox-From',
} as const;

/**
 * The leader's relay: reads the outbox once for every instance and publishes it (see the top of
 * this file). A leader task: started when elected, stopped when not.
 */
export class NatsRelay implements LeaderTask {
  readonly name = 'outbox relay to NATS';
  private readonly reader: OutboxReader;
  private readonly loop: PollLoop;
  private term = '';
  private positioned = false;
  private lastRead = 0;
  private lastMarker = 0;
  private busyUntil = 0;
  private hints: Subscription | undefined;
  private offLink: (() => void) | undefined;
  /** Events published (the tests and the scaling figures read it). */
  readonly stats = { published: 0, duplicates: 0, markers: 0, reads: 0 };

  constructor(
    private readonly link: NatsLink,
    query: OutboxQuery,
    private readonly log: Logger,
    private readonly idleMs: number,
    onRead?: (rows: number) => void,
  ) {
    this.reader = new OutboxReader({
      query,
      log,
      intervalMs: idleMs,
      interested: () => true,
      anyInterest: () => true,
      deliver: (batch) => this.publish(batch),
      onRead: (rows) => {
        this.stats.reads++;
        if (rows > 0) this.busyUntil = Date.now() + 1000;
        onRead?.(rows);
      },
    });
    this.loop = new PollLoop(
      () => this.pass(),
      () => (Date.now() < this.busyUntil ? BUSY_POLL_MS : Math.min(this.idleMs, MARKER_EVERY_MS)),
      (err) => log.warn({ err: { message: (err as Error).message } }, 'outbox relay to NATS failed; retrying'),
    );
  }

  start(): void {
    this.term = randomUUID();
    this.positioned = false;
    this.offLink = this.link.onChange((up) => {
      if (up) {
        this.subscribeHints();
        this.loop.wake();
      }
    });
    this.subscribeHints();
    this.loop.start({ now: true });
  }

  private subscribeHints(): void {
    const nc = this.link.connection;
    if (!nc || this.hints) return;
    this.hints = nc.subscribe(this.link.names.hint, { callback: () => this.loop.wake() });
  }

  private async pass(): Promise<boolean> {
    const js = this.link.jetstream;
    if (!js) return false;
    if (!this.positioned) await this.position();
    const wait = this.lastRead + RELAY_MIN_GAP_MS - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    this.lastRead = Date.now();
    return this.reader.readOnce();
  }

  /** Where this term starts: after what the stream already holds (its last message says), or now for an empty stream. */
  private async position(): Promise<void> {
    const nc = this.link.connection;
    if (!nc) throw new Error('NATS away');
    const jsm = await jetstreamManager(nc, { timeout: PUBLISH_TIMEOUT_MS });
    const info = await jsm.streams.info(this.link.stream);
    let from: string | undefined;
    if (info.state.last_seq > 0) {
      const last = await jsm.streams.getMessage(this.link.stream, { seq: info.state.last_seq }).catch(() => null);
      if (last?.subject === this.link.names.marker) from = (JSON.parse(new TextDecoder().decode(last.data)) as Marker).to;
      else from = last?.header?.get(H.from) || undefined;
    }
    if (from) this.reader.resumeFrom(parseSnapshot(from));
    else {
      this.reader.detach();
      await this.reader.attach();
    }
    this.positioned = true;
    this.log.info({ from: from ? 'the stream' : 'now', term: this.term }, 'outbox relay to NATS started');
  }

  /**
   * Publishes a batch: a subject's events (a payment request's) one after another (the next once
   * the previous is stored, so a failure never leaves a later event of a subject in the stream
   * without an earlier one), different subjects' at once; then the batch's marker. Any failure rejects: the
   * reader reads the batch again (what was stored is dropped as a duplicate).
   */
  private async publish(batch: OutboxBatch): Promise<void> {
    const js = this.link.jetstream;
    if (!js) throw new Error('NATS away');
    const bySubject = new Map<string, OutboxRow[]>();
    for (const row of batch.rows) {
      const list = bySubject.get(row.subjectId);
      if (list) list.push(row);
      else bySubject.set(row.subjectId, [row]);
    }
    await Promise.all(
      [...bySubject.values()].map(async (rows) => {
        for (const row of rows) {
          const h = headers();
          h.set(H.type, row.type);
          h.set(H.subject, row.subjectId);
          h.set(H.sequence, String(row.sequence));
          h.set(H.user, row.userId);
          h.set(H.xid, row.xid);
          h.set(H.from, batch.from.text);
          const ack = await js.publish(this.link.names.user(row.userId), row.payload, { msgID: row.id, headers: h, timeout: PUBLISH_TIMEOUT_MS });
          if (ack.duplicate) this.stats.duplicates++;
          else this.stats.published++;
        }
      }),
    );
    if (batch.to && (batch.rows.length > 0 || Date.now() - this.lastMarker >= MARKER_EVERY_MS)) {
      const marker: Marker = { term: this.term, from: batch.from.text, to: batch.to.text };
      await js.publish(this.link.names.marker, JSON.stringify(marker), { timeout: PUBLISH_TIMEOUT_MS });
      this.lastMarker = Date.now();
      this.stats.markers++;
    }
  }

  async stop(): Promise<void> {
    this.offLink?.();
    this.offLink = undefined;
    this.hints?.unsubscribe();
    this.hints = undefined;
    await this.loop.stop();
  }
}

export interface NatsFeedOptions {
  link: NatsLink;
  query: OutboxQuery;
  log: Logger;
  /** OUTBOX_POLL_INTERVAL_MS: the fallback reader's and the relay's quiet interval. */
  idleMs: number;
  onRead?: (rows: number, reader: 'relay' | 'fallback') => void;
  /** A marker was taken in: everything the relay published up to it has arrived here. */
  onMarker?: () => void;
}

/** An instance's feed from NATS, with PostgreSQL as its fallback (see the top of this file). */
export class NatsFeed implements OutboxFeed {
  private readonly users = new Set<string>();
  private deliver: ((rows: OutboxRow[]) => void) | undefined;
  /** Coverage: every event visible in C that a subscriber here wanted has been delivered. */
  private coverage: Snapshot | undefined;
  /** Events delivered from NATS that C does not cover yet (id → xid). */
  private readonly ahead = new Map<string, string>();
  /** Xids of wanted events dropped since the last marker because the instance was not linked. */
  private readonly dropped = new Set<string>();
  private linked = false;
  /** The relay term of the last marker, when no message was missed since it. */
  private prevTerm: string | undefined;
  private lastSeq: number | undefined;
  private lastMarkerAt = 0;
  private consuming = false;
  private stopping = false;
  private readonly fallback: OutboxReader;
  private fallbackOn = false;
  private busyUntil = 0;
  private timer: NodeJS.Timeout | undefined;
  private hintPending = false;
  private iterator: { close(): Promise<void | Error> } | undefined;
  private offLink: (() => void) | undefined;
  /** The leader's share: the relay. */
  readonly leaderTask: NatsRelay;
  /** Where events came from (tests and the scaling figures read it). */
  readonly stats = { fromNats: 0, fromPostgres: 0, fallbackStarts: 0 };

  constructor(private readonly opts: NatsFeedOptions) {
    this.leaderTask = new NatsRelay(opts.link, opts.query, opts.log, opts.idleMs, (rows) => opts.onRead?.(rows, 'relay'));
    const busyMs = Math.min(BUSY_POLL_MS, opts.idleMs);
    this.fallback = new OutboxReader({
      query: opts.query,
      log: opts.log,
      intervalMs: () => (Date.now() < this.busyUntil ? busyMs : opts.idleMs),
      interested: (userId) => this.users.has(userId),
      anyInterest: () => this.users.size > 0,
      deliver: (batch) => this.fromPostgres(batch),
      onRead: (rows) => opts.onRead?.(rows, 'fallback'),
      what: 'outbox read (NATS fallback) failed; retrying',
    });
  }

  async start(deliver: (rows: OutboxRow[]) => void): Promise<void> {
    this.deliver = deliver;
    this.offLink = this.opts.link.onChange((up) => {
      if (up) void this.consume();
      this.review();
    });
    this.opts.link.start();
    this.timer = setInterval(() => this.review(), 500);
    this.timer.unref();
  }

  /** Whether NATS brings everything now (linked, connected, and the relay's markers arriving). */
  private get natsCarries(): boolean {
    return this.linked && this.consuming && this.opts.link.up && Date.now() - this.lastMarkerAt < MARKER_STALE_MS;
  }

  /** Starts or stops the PostgreSQL reader: on while someone listens and NATS does not carry everything. */
  private review(): void {
    const want = this.users.size > 0 && !this.natsCarries;
    if (want === this.fallbackOn || this.stopping) return;
    this.fallbackOn = want;
    if (want) {
      this.stats.fallbackStarts++;
      if (this.coverage) this.fallback.resumeFrom(this.coverage);
      this.opts.log.info({ linked: this.linked, nats: this.opts.link.up }, 'events: reading PostgreSQL until NATS carries them again');
      this.fallback.start();
      this.fallback.wake();
    } else {
      this.opts.log.info('events: NATS carries them again');
      void this.fallback.stop();
    }
  }

  /** Consumes the stream (one ordered consumer); a new one after the old one ended. */
  private async consume(): Promise<void> {
    const js = this.opts.link.jetstream;
    if (!js || this.consuming || this.stopping) return;
    this.consuming = true;
    this.prevTerm = undefined;
    this.lastSeq = undefined;
    this.linked = false;
    try {
      const consumer = await js.consumers.get(this.opts.link.stream, { filter_subjects: this.opts.link.names.all, deliver_policy: DeliverPolicy.New });
      const messages = await consumer.consume();
      this.iterator = messages;
      for await (const m of messages) this.onMessage(m);
    } catch (err) {
      if (!this.stopping) this.opts.log.warn({ err: { message: (err as Error).message } }, 'NATS consumer ended; starting another');
    } finally {
      this.consuming = false;
      this.linked = false;
      this.iterator = undefined;
      this.review();
      if (!this.stopping && this.opts.link.up) setTimeout(() => void this.consume(), 500).unref();
    }
  }

  private onMessage(m: JsMsg): void {
    if (this.lastSeq !== undefined && m.seq !== this.lastSeq + 1) {
      // A gap in the stream (messages aged out, a stream recreated): the batch under way is not whole.
      this.prevTerm = undefined;
      this.linked = false;
    }
    this.lastSeq = m.seq;
    if (m.subject === this.opts.link.names.marker) {
      this.onMarker(JSON.parse(m.string()) as Marker);
      return;
    }
    const h = m.headers;
    const userId = h?.get(H.user);
    if (!h || !userId || !this.users.has(userId)) return;
    const xid = h.get(H.xid);
    const id = (h as MsgHdrs).get('Nats-Msg-Id');
    if (!xid || !id) return;
    if ((this.coverage && visibleIn(xid, this.coverage)) || this.ahead.has(id)) return; // delivered from PostgreSQL
    if (!this.linked) {
      this.dropped.add(xid); // the PostgreSQL reader brings it
      return;
    }
    this.ahead.set(id, xid);
    this.stats.fromNats++;
    this.deliver?.([{ id, xid, userId, type: h.get(H.type) as OutboxEventType, subjectId: h.get(H.subject), sequence: Number(h.get(H.sequence)), payload: m.string() }]);
  }

  private onMarker(marker: Marker): void {
    this.lastMarkerAt = Date.now();
    const whole = this.prevTerm === marker.term;
    this.prevTerm = marker.term;
    const c = this.coverage;
    const to = parseSnapshot(marker.to);
    if (whole && (this.users.size === 0 || (c !== undefined && covers(c, parseSnapshot(marker.from)) && [...this.dropped].every((x) => visibleIn(x, c))))) {
      this.advance(to);
      this.linked = true;
      this.opts.onMarker?.();
    } else {
      this.linked = false;
    }
    this.dropped.clear();
    this.review();
  }

  /** C moves to `s` when `s` is later; what C now covers leaves `ahead`. */
  private advance(s: Snapshot): void {
    if (this.coverage && !covers(s, this.coverage)) return;
    this.coverage = s;
    for (const [id, xid] of this.ahead) if (visibleIn(xid, s)) this.ahead.delete(id);
  }

  private fromPostgres(batch: OutboxBatch): void {
    const c = this.coverage;
    const fresh: OutboxRow[] = [];
    for (const row of batch.rows) {
      if ((c && visibleIn(row.xid, c)) || this.ahead.has(row.id)) continue;
      this.ahead.set(row.id, row.xid);
      fresh.push(row);
    }
    if (fresh.length > 0) {
      this.busyUntil = Date.now() + 1000;
      this.stats.fromPostgres += fresh.length;
      this.deliver?.(fresh);
    }
    if (batch.to) this.advance(batch.to);
  }

  committed(read: boolean): void {
    if (this.fallbackOn && read) this.fallback.wake();
    // One hint per turn of the event loop, however many commits: the relay reads soon.
    if (this.hintPending) return;
    this.hintPending = true;
    setImmediate(() => {
      this.hintPending = false;
      try {
        this.opts.link.connection?.publish(this.opts.link.names.hint);
      } catch {
        // NATS away: the relay polls
      }
    });
  }

  async watch(userId: string): Promise<void> {
    this.users.add(userId);
    if (this.natsCarries) return;
    this.review();
    await this.fallback.attach();
    if (!this.coverage) this.coverage = this.fallback.position;
  }

  unwatch(userId: string): void {
    this.users.delete(userId);
    if (this.users.size === 0) this.review();
  }

  get healthy(): boolean {
    return this.natsCarries || (this.fallbackOn && !this.fallback.failing);
  }

  async close(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.offLink?.();
    await this.iterator?.close().catch(() => undefined);
    await this.fallback.stop();
    await this.opts.link.close();
  }
}
