import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { LocalFeed, type OutboxFeed } from './event-hub.js';
import { NatsFeed, NatsLink } from './nats.js';
import type { OutboxQuery } from './outbox.js';

/**
 * The feed of one instance (one process): with NATS_URL, the stream the leader publishes the
 * outbox to, with a reader of its own while NATS is away (nats.ts); without, a reader of its own
 * (LocalFeed). `query` runs the reads on the instance's pool; `onRead` feeds the lag metric.
 */
export function createOutboxFeed(config: Config, log: Logger, query: OutboxQuery, onRead: (rows: number, reader: OutboxReaderKind) => void): OutboxFeed {
  if (config.natsUrl) {
    // A marker taken in (everything the relay published up to it has arrived) is caught up, as a short read is.
    const onMarker = () => onRead(0, 'marker');
    return new NatsFeed({ link: new NatsLink(config.natsUrl, config.natsStream, log), query, log, idleMs: config.outboxPollIntervalMs, onRead, onMarker });
  }
  return new LocalFeed(query, log, config.outboxPollIntervalMs, (rows) => onRead(rows, 'instance'));
}

/** Which reader read (the `reader` label of outbox_reads_total); 'marker': not a read, a NATS batch marker taken in. */
export type OutboxReaderKind = 'instance' | 'relay' | 'fallback' | 'marker';
