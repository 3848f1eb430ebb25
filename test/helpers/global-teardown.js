// Jest globalTeardown: stops the database processes test/helpers/global-setup.ts started (they
// also exit by themselves when this process ends and their stdin closes).
import { stopDatabaseProcess } from './database-process.js';

export default async function globalTeardown() {
  const children = globalThis.__walletGatewayDatabases ?? [];
  globalThis.__walletGatewayDatabases = undefined;
  await Promise.all(children.map(stopDatabaseProcess));
}
