import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Middleware } from 'koa';
import type { ErrorBody } from '../errors.js';

/**
 * Koa's routers answer 501 (a server error) for methods they do not implement, such as TRACE,
 * PROPFIND or PURGE. A client's choice of method is a client error: 405 with `Allow` on a known
 * path, 404 elsewhere. The error boundary adds the Error body.
 */
export const unknownMethods: Middleware = async (ctx, next) => {
  await next();
  if (ctx.status !== 501 || (ctx.body !== undefined && ctx.body !== null)) return;
  if (ctx.response.get('Allow')) ctx.status = 405;
  else {
    ctx.remove('Allow');
    ctx.status = 404;
  }
};

/** Node parser errors a client causes, with the status and message each is answered with. */
const CLIENT_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request headers too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request timeout'],
  HPE_INVALID_METHOD: [400, 'Bad request: unknown method'],
};

/** Writes a complete HTTP/1.1 response with the Error body straight onto a socket, then closes it. */
function writeRaw(socket: Duplex, statusCode: number, message: string, extra = ''): void {
  const body = JSON.stringify({ statusCode, message } satisfies ErrorBody);
  socket.end(
    `HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
}

/**
 * Requests Node's parser refuses before any handler runs (headers over 16 KB, malformed request
 * lines, unknown methods, header timeouts) get the Error body instead of Node's empty 400/431;
 * CONNECT (which Node hands to a separate event) is refused with 405.
 */
export function answerMalformedRequests(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // A response already started on this socket, or the peer is gone: nothing more can be said.
    if (err.code === 'ECONNRESET' || !socket.writable || (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, message] = CLIENT_ERRORS[err.code ?? ''] ?? [400, 'Bad request'];
    writeRaw(socket, status, message);
  });
  server.on('connect', (_req, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    writeRaw(socket, 405, 'Method not allowed', 'Allow: GET, POST\r\n');
  });
}
