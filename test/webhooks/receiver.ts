import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request a receiver got. */
export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: { id: string; type: string; createdAt: string; data: { paymentRequest: Record<string, any>; transaction?: Record<string, any> } };
  /** What the receiver answered. */
  status: number;
  at: number;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Resolves once `predicate` holds for the requests received so far. */
  until(predicate: (received: Received[]) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

/**
 * A real webhook receiver: a node:http server on 127.0.0.1 (port 0 unless given). `respond`
 * decides the status of each request (default 200) and may delay the answer.
 */
export async function startReceiver(
  opts: { port?: number; respond?: (r: Omit<Received, 'status' | 'at'>, index: number) => number | Promise<number> } = {},
): Promise<Receiver> {
  const received: Received[] = [];
  const waiters = new Set<() => void>();
  let index = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const base = {
          id: String(req.headers['webhook-id']),
          timestamp: String(req.headers['webhook-timestamp']),
          signature: String(req.headers['webhook-signature']),
          headers: req.headers,
          body,
          json: JSON.parse(body) as Received['json'],
        };
        const status = opts.respond ? await opts.respond(base, index++) : 200;
        res.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
        received.push({ ...base, status, at: Date.now() });
        for (const w of waiters) w();
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    until(predicate, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (predicate(received)) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(received);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`receiver: condition not met within ${timeoutMs} ms; got ${received.map((r) => `${r.json.type}:${r.status}`).join(', ')}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Verifies a received webhook with the independent Standard Webhooks implementation (npm `standardwebhooks`). */
export function verify(secret: string, r: Pick<Received, 'body' | 'headers'>): unknown {
  return new Webhook(secret).verify(r.body, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  });
}
