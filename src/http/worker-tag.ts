import cluster from 'node:cluster';
import type http from 'node:http';
import type { WebSocketServer } from 'ws';
import type { Config } from '../config.js';

/**
 * Development only, in a cluster worker: every response and WebSocket upgrade says which worker
 * answered (`X-Worker: <pid>`), so tests can reach two different workers on the one shared port.
 */
export function tagWorker(config: Config, server: http.Server, wss: WebSocketServer): void {
  if (config.appEnv !== 'development' || !cluster.isWorker) return;
  const tag = String(process.pid);
  server.prependListener('request', (_req: http.IncomingMessage, res: http.ServerResponse) => res.setHeader('X-Worker', tag));
  wss.on('headers', (headers: string[]) => headers.push(`X-Worker: ${tag}`));
}
