import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/** An in-process PostgreSQL (PGlite) served on a loopback port, so the normal driver talks to it. */
export interface EmbeddedPostgres {
  readonly db: PGlite;
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Starts PGlite with its files in `dataDir` and a wire-protocol server on 127.0.0.1 (random
 * port). PGlite is a single session: the socket server runs one statement at a time and keeps
 * an open transaction to its own connection, so connections see the usual isolation.
 */
export async function startEmbeddedPostgres(dataDir: string, maxConnections: number): Promise<EmbeddedPostgres> {
  const db = await PGlite.create(dataDir);
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections });
  await server.start();
  const url = `postgresql://postgres@${server.getServerConn()}/postgres`;
  return {
    db,
    url,
    async close() {
      await server.stop();
      await db.close();
    },
  };
}
