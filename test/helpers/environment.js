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

export default class GatewayTestEnvironment extends TestEnvironment {
  /** Whether this file holds the worker's database now. */
  held = false;

  async setup() {
    await super.setup();
    // Without the database processes (the browser tests' config) each database migrates itself, as before.
    if (process.env.TEST_DATABASE_URL || !process.env[CONTROL_VAR]) return;
    // Called by test/helpers/db.ts for the file's database: the worker's embedded PostgreSQL, as
    // the migrated template, on a loopback port of its own.
    this.global.__walletGatewayEmbedded = async (maxConnections) => {
      if (this.held) throw new Error('the worker database is already held by this file');
      this.held = true;
      const { url } = await embeddedControl('acquire', { maxConnections }).catch((err) => {
        this.held = false;
        throw err;
      });
      return {
        url,
        close: async () => {
          if (!this.held) return;
          this.held = false;
          await embeddedControl('release');
        },
      };
    };
  }

  async teardown() {
    if (this.held) {
      this.held = false;
      await embeddedControl('release');
    }
    await super.teardown();
  }
}
