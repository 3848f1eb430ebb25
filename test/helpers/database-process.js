// Starting and calling an embedded database process (./pglite-server.js). Plain JavaScript with
// its types beside it (./database-process.d.ts): used by ./global-setup.ts (one process per Jest
// worker slot), ./environment.js, ./pglite-server.js (the processes of a file's further
// databases) and ./db.ts (a fourth database a file holds at the same time).
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SERVER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'pglite-server.js');

/** Starts ./pglite-server.js on the migrated template and resolves with its control port. */
export function startDatabaseProcess(template) {
  const child = spawn(process.execPath, [SERVER, template], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the database process exited (${code}) before it listened`)));
    child.stdout.on('data', (chunk) => {
      out += chunk.toString('utf8');
      const line = /^(\d+)\n/.exec(out);
      if (!line) return;
      child.removeAllListeners('exit');
      child.stdout.removeAllListeners('data');
      child.stdout.resume();
      resolve({ child, port: Number(line[1]) });
    });
  });
}

/**
 * Calls an action of the database process listening on `port` (see ./pglite-server.js), on a
 * connection of its own: a kept-alive one could be closed by the server while a busy worker's
 * event loop is blocked loading the next file (`other side closed` on its next request).
 */
export function databaseControl(port, action, params = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: Number(port), method: 'POST', path: `/${action}?${new URLSearchParams(params)}`, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('error', reject);
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`embedded database ${action} failed: ${text}`));
        else resolve(JSON.parse(text));
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Ends a database process: its stdin closed, then SIGTERM; resolves once it exited. */
export function stopDatabaseProcess(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.stdin?.end();
    child.kill('SIGTERM');
  });
}
