import type http from 'node:http';
import type { WebSocket, WebSocketServer } from 'ws';
import { CloseCode, DEPRECATED_GRAPHQL_WS_PROTOCOL, handleProtocols, makeServer, type ServerOptions } from 'graphql-ws';
import type { Logger } from 'pino';
import { jsonTooDeep } from '../http/body.js';

/** Message types a client may send (graphql-transport-ws); anything else is a protocol error. */
const CLIENT_MESSAGE_TYPES = new Set(['connection_init', 'ping', 'pong', 'subscribe', 'complete']);

/**
 * Why a client's message breaks the protocol before graphql-ws sees it (it would throw, which is
 * a 4500 and a stack in the log): too deeply nested, or a type only a server sends.
 */
function protocolViolation(text: string): string | undefined {
  if (jsonTooDeep(text)) return 'Message is nested too deeply';
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return undefined; // graphql-ws answers unparsable messages itself (4400)
  }
  const type = (message as { type?: unknown } | null)?.type;
  if (typeof type === 'string' && !CLIENT_MESSAGE_TYPES.has(type)) return 'Invalid message received';
  return undefined;
}

/** What each graphql-ws context carries from the transport. */
export interface WsExtra {
  readonly socket: WebSocket;
  readonly request: http.IncomingMessage;
}

/**
 * graphql-ws on a `ws` server: graphql-ws's own `useServer` (graphql-ws/use/ws), adapted so that
 * transport errors go to the structured log instead of `console.error`, and close reasons never
 * carry an error's message. Pings every `keepAliveMs` and drops a socket that misses the pong.
 */
export function useGraphqlWsServer<P extends Record<string, unknown> | undefined, E extends Record<PropertyKey, unknown>>(
  options: ServerOptions<P, WsExtra & Partial<E>>,
  wss: WebSocketServer,
  log: Logger,
  keepAliveMs = 12_000,
): { dispose(): Promise<void> } {
  const server = makeServer(options);
  wss.options.handleProtocols = handleProtocols;
  wss.on('error', (err) => {
    log.error({ err }, 'WebSocket server error');
    for (const client of wss.clients) client.close(CloseCode.InternalServerError, 'Internal server error');
  });
  wss.on('connection', (socket, request) => {
    socket.once('error', (err) => {
      // e.g. a frame over maxPayload: ws has already closed the socket (1009); nothing else to do.
      log.warn({ err: { message: err.message } }, 'WebSocket error');
      if (socket.readyState === socket.OPEN) socket.close(CloseCode.InternalServerError, 'Internal server error');
    });
    let pongWait: NodeJS.Timeout | null = null;
    const ping =
      keepAliveMs > 0
        ? setInterval(() => {
            if (socket.readyState !== socket.OPEN) return;
            pongWait = setTimeout(() => socket.terminate(), keepAliveMs);
            socket.once('pong', () => {
              if (pongWait) clearTimeout(pongWait);
              pongWait = null;
            });
            socket.ping();
          }, keepAliveMs)
        : null;
    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: (data) =>
          new Promise<void>((resolve, reject) => {
            if (socket.readyState !== socket.OPEN) return resolve();
            socket.send(data, (err) => (err ? reject(err) : resolve()));
          }),
        close: (code, reason) => socket.close(code, reason),
        onMessage: (cb) =>
          socket.on('message', async (data) => {
            const text = String(data);
            const violation = protocolViolation(text);
            if (violation) {
              log.info({ reason: violation }, 'WebSocket protocol violation');
              socket.close(CloseCode.BadRequest, violation);
              return;
            }
            try {
              await cb(text);
            } catch (err) {
              log.error({ err }, 'graphql-ws message handling failed');
              socket.close(CloseCode.InternalServerError, 'Internal server error');
            }
          }),
      },
      { socket, request } as WsExtra & Partial<E>,
    );
    socket.once('close', (code, reason) => {
      if (pongWait) clearTimeout(pongWait);
      if (ping) clearInterval(ping);
      if (code === CloseCode.SubprotocolNotAcceptable && socket.protocol === DEPRECATED_GRAPHQL_WS_PROTOCOL) {
        log.info('client used the deprecated subscriptions-transport-ws protocol');
      }
      void closed(code, String(reason));
    });
  });
  return {
    async dispose() {
      for (const client of wss.clients) client.close(1001, 'Going away');
      wss.removeAllListeners();
      await new Promise<void>((resolve, reject) => wss.close((err) => (err ? reject(err) : resolve())));
    },
  };
}
