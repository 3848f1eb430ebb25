import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';

/** The development consent signing key's file under DATA_DIR (0600). */
export const DEV_KEY_FILE = 'consent-signing-key.pem';
/** The development PIN pepper's file under DATA_DIR (0600): 32 random bytes, hex. */
export const DEV_PEPPER_FILE = 'pin-pepper.hex';

/**
 * The secrets a process needs before it builds anything, resolved where it starts (src/gateway-main.ts,
 * the CLI, a test's gateway): CONSENT_SIGNING_KEY and PIN_PEPPER as set; in development, when unset,
 * the ones kept under DATA_DIR, made on first use (production's configuration already refused to
 * start without them, src/config.ts). Building the services never writes a file: it is handed a
 * configuration that holds both.
 */
export function resolveStartupKeys(config: Config): Config {
  if (config.consentSigningKey && config.pinPepper) return config;
  if (config.appEnv === 'production') throw new Error('CONSENT_SIGNING_KEY and PIN_PEPPER are required in production');
  return Object.freeze({
    ...config,
    consentSigningKey:
      config.consentSigningKey ?? devSecret(config.dataDir, DEV_KEY_FILE, () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()),
    pinPepper: config.pinPepper ?? devSecret(config.dataDir, DEV_PEPPER_FILE, () => randomBytes(32).toString('hex')).trim(),
  });
}

/**
 * A development secret kept in `file` under DATA_DIR, made by `make` on first use. The file is
 * written whole under a temporary name and linked into place, so of processes starting together
 * (cluster workers) exactly one creates it and all read the same secret. An in-memory DATA_DIR
 * gets a secret for this process only.
 */
function devSecret(dataDir: string, file: string, make: () => string): string {
  if (dataDir.startsWith('memory://')) return make();
  const dir = path.resolve(dataDir);
  const target = path.join(dir, file);
  try {
    return readFileSync(target, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temporary = path.join(dir, `.${file}.${randomUUID()}`);
  writeFileSync(temporary, make(), { mode: 0o600, flag: 'wx' });
  try {
    linkSync(temporary, target);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(temporary);
  }
  return readFileSync(target, 'utf8');
}
