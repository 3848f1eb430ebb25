import { PGlite } from '@electric-sql/pglite';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sessionServer } from './pglite-session.js';

/** An in-process PostgreSQL (PGlite) served on a loopback port, so the normal driver talks to it. */
export interface EmbeddedPostgres {
  readonly url: string;
  close(): Promise<void>;
}

const INFO_FILE = 'embedded.json';

/**
 * Starts PGlite with its files in `dataDir` and a wire-protocol server on 127.0.0.1 (random
 * port). PGlite is a single session: the socket server gives it to one connection at a time, from
 * a statement's first message to its end, and for the whole of a transaction (src/db/pglite-session.ts).
 * For an on-disk database it writes `embedded.json` beside the files so that other processes
 * (the CLI while `npm start` runs) connect to this server instead of opening the files twice.
 * `loadDataDir` (a `dumpDataDir` tarball) seeds a new data directory with its contents.
 */
export async function startEmbeddedPostgres(dataDir: string, maxConnections: number, loadDataDir?: Blob): Promise<EmbeddedPostgres> {
  const db = await PGlite.create(dataDir, loadDataDir ? { loadDataDir } : {});
  const server = sessionServer(db, { host: '127.0.0.1', port: 0, maxConnections });
  await server.start();
  const url = `postgresql://postgres@${server.getServerConn()}/postgres`;
  const onDisk = !dataDir.startsWith('memory://');
  const infoPath = path.join(dataDir, INFO_FILE);
  if (onDisk) await writeFile(infoPath, JSON.stringify({ pid: process.pid, url }));
  return {
    url,
    async close() {
      if (onDisk) await rm(infoPath, { force: true });
      await server.stop();
      await db.close();
    },
  };
}

/** The URL of an embedded PostgreSQL another live process is serving from `dataDir`, if any. */
export async function runningEmbeddedUrl(dataDir: string): Promise<string | undefined> {
  try {
    const info = JSON.parse(await readFile(path.join(dataDir, INFO_FILE), 'utf8')) as { pid: number; url: string };
    if (info.pid === process.pid) return undefined;
    process.kill(info.pid, 0);
    return info.url;
  } catch {
    return undefined;
  }
}
