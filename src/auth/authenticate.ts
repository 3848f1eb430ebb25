import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { safeEqual } from './hash.js';
import { ANONYMOUS, type Principal } from './principal.js';
import type { SecretKeyVerifier } from './secret-keys.js';
import { verifyUserToken } from './user-tokens.js';

export interface Authenticator {
  /** Any caller: developer (secret key), admin (admin token) or user (access token). */
  fromAuthorization(header: string | undefined, log?: Logger): Promise<Principal>;
  /** A developer only (the REST door): 401 `Missing bearer token` / `Invalid secret key`. */
  developerFromAuthorization(header: string | undefined, log?: Logger): Promise<Principal>;
}

/** Reads `Authorization: Bearer <token>`; undefined when absent, null when malformed. */
export function bearerToken(header: string | undefined): string | undefined | null {
  if (header === undefined || header.trim() === '') return undefined;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/** Builds the authenticator shared by the HTTP doors. */
export function createAuthenticator(config: Config, keys: SecretKeyVerifier): Authenticator {
  return {
    async fromAuthorization(header, log) {
      const token = bearerToken(header);
      if (token === undefined) return ANONYMOUS;
      if (token === null) throw new AppError('UNAUTHENTICATED', 'Invalid authorization header');
      if (token.startsWith('sk_')) return { kind: 'developer', ...(await keys.verify(token, log)) };
      if (safeEqual(token, config.adminToken)) return { kind: 'admin' };
      return { kind: 'user', userId: await verifyUserToken(config, token) };
    },
    async developerFromAuthorization(header, log) {
      const token = bearerToken(header);
      if (token === undefined) throw new AppError('UNAUTHENTICATED', 'Missing bearer token');
      if (token === null) throw new AppError('UNAUTHENTICATED', 'Invalid secret key');
      return { kind: 'developer', ...(await keys.verify(token, log)) };
    },
  };
}
