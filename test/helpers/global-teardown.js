// Jest globalTeardown: closes the embedded PostgreSQL that test/helpers/environment.js keeps,
// when the files ran in this process (one file, --runInBand); a no-op after a run in workers.
import { closeWorkerDatabase } from './environment.js';

export default async function globalTeardown() {
  await closeWorkerDatabase();
}
