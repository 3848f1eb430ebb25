import type http from 'node:http';
import net from 'node:net';
import type { Socket } from 'node:net';
import type { ErrorBody } from '../errors.js';

/** Graceful shutdown of a keep-alive HTTP server that never runs a request it cannot answer. */
export interface HttpDrain {
  /** True once `close()` has been called. */
  readonly draining: boolean;
  /**
   * Wraps the app's request listener: while draining, a request on a kept-alive socket (one that
   * already carried a request) is answered 503 with `Connection: close` before it runs; the first
   * request of a connection accepted before the drain (e.g. handed over late by the cluster's
   * primary) still runs, marked `Connection: close`. Running requests are counted as in flight.
   */
  guard(listener: http.RequestListener): http.RequestListener;
  /**
   * Stops accepting, marks every response from now on `Connection: close`, waits for the requests
   * in flight to be answered, then closes the idle keep-alive sockets and waits for the last
   * connection (WebSockets included) to end. After `graceMs` whatever is left is destroyed.
   */
  close(graceMs: number): Promise<void>;
}

const SHUTTING_DOWN: ErrorBody = { statusCode: 503, message: 'Server is shutting down' };

/**
 * Why not Node's `server.close()` (which closes idle sockets at once) or Apollo's drain plugin
 * (which ends them): a keep-alive client may have a request on the wire at that very moment; the
 * server then parses and runs it but can no longer write the reply (the client sees ECONNRESET
 * for a write that happened). Here idle sockets stay open while in-flight requests finish, and
 * any request that still arrives is refused before it runs, with a reply the client can read.
 */
export function createHttpDrain(server: http.Server): HttpDrain {
  const inFlight = new Set<http.ServerResponse>();
  const sockets = new Set<Socket>();
  const used = new WeakSet<Socket>();
  let draining = false;
  let settled: (() => void) | undefined;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));

  return {
    get draining() {
      return draining;
    },
    guard(listener) {
      return (req, res) => {
        const reused = used.has(req.socket);
        used.add(req.socket);
        if (draining && reused) {
          const body = JSON.stringify(SHUTTING_DOWN);
          res.writeHead(503, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close', 'Retry-After': '1' });
          res.end(body);
          return;
        }
        if (draining) res.setHeader('Connection', 'close');
        inFlight.add(res);
        res.once('close', () => {
          inFlight.delete(res);
          if (inFlight.size === 0) settled?.();
        });
        listener(req, res);
      };
    },
    async close(graceMs) {
      if (draining) return;
      draining = true;
      for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
      // Stop accepting without http.Server#close, which would also drop the idle sockets now.
      if (server.listening) net.Server.prototype.close.call(server);
      const deadline = new Promise<'timeout'>((resolve) => setTimeout(resolve, graceMs, 'timeout').unref());
      if (inFlight.size > 0) {
        await Promise.race([new Promise<void>((resolve) => (settled = resolve)), deadline]);
      }
      // Nothing runs any more: what is left is idle keep-alive sockets (and WebSockets, closed by
      // their own door). http.Server#close also stops Node's connection-checking timer.
      server.close();
      if ((await Promise.race([sockets.size === 0 ? Promise.resolve() : closed, deadline])) === 'timeout') {
        for (const socket of sockets) socket.destroy();
      }
    },
  };
}
