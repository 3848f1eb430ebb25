// Jest test environment: Node's, plus the Jest worker's embedded PostgreSQL.
//
// Plain JavaScript on purpose: Jest loads the environment with Node's own loader, outside the
// per-file module registry. The database itself runs in a process of its own per worker slot
// (test/helpers/pglite-server.js, started by test/helpers/global-setup.ts): loading PGlite from the
// migrated template costs about 1.5 CPU-seconds and a few hundred MB, paid there once per run and
// not in the worker's heap. Before each file that asks for it (test/helpers/db.ts) that database is
// put back to the migrated state (session reset, every table emptied, sequences restarted) and
// served on a new socket server, which is stopped after the file (rolling back whatever a
// connection left open).
// On TEST_DATABASE_URL (a PostgreSQL server) none of this runs: each file creates a database.
import { TestEnvironment } from 'jest-environment-node';
import { databaseControl } from './database-process.js';

/** Set by test/helpers/global-setup.ts: the control ports of the database processes, one per worker slot. */
const CONTROL_VAR = 'WG_TEST_PGLITE_CONTROL';

/** Calls an action of this worker slot's database process. */
function embeddedControl(action, params = {}) {
  const ports = (process.env[CONTROL_VAR] ?? '').split(',').filter(Boolean);
  const slot = (Number(process.env.JEST_WORKER_ID ?? '1') - 1) % ports.length;
  return databaseControl(ports[slot], action, params);
}

/** How many databases a file may hold at once in the worker's database process (more: a process of their own, test/helpers/db.ts). */
const DATABASES_PER_WORKER = 3;

export default class GatewayTestEnvironment extends TestEnvironment {
  /** The indexes of the worker's databases this file holds now. */
  held = new Set();

  async setup() {
    await super.setup();
    // Without the database processes (the browser tests' config) each database migrates itself, as before.
    if (process.env.TEST_DATABASE_URL || !process.env[CONTROL_VAR]) return;
    // Called by test/helpers/db.ts for each database a file opens: one of the worker's embedded
    // databases, as the migrated template, on a loopback port of its own; undefined when the
    // file holds them all.
    this.global.__walletGatewayEmbedded = async (maxConnections) => {
      let index = 0;
      while (this.held.has(index)) index++;
      if (index >= DATABASES_PER_WORKER) return undefined;
      this.held.add(index);
      const { url } = await embeddedControl('acquire', { index, maxConnections }).catch((err) => {
        this.held.delete(index);
        throw err;
      });
      return {
        url,
        close: async () => {
          if (!this.held.delete(index)) return;
          await embeddedControl('release', { index });
        },
      };
    };
  }

  async teardown() {
    const held = [...this.held];
    this.held.clear();
    for (const index of held) await embeddedControl('release', { index });
    await super.teardown();
  }
}
