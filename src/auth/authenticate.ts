import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { safeEqual } from './hash.js';
import { ANONYMOUS, type Principal } from './principal.js';
import type { SecretKeyVerifier } from './secret-keys.js';
import { verifyUserTokenClaims } from './user-tokens.js';
import { OPERATOR_TOKEN_PREFIX, ROOT_OPERATOR, type OperatorService } from '../operators/operator.service.js';

/**
 * Which door a credential arrived at: REST takes secret keys only; GraphQL over HTTP takes any
 * credential (or none: operations then refuse anonymous callers themselves); the WebSocket door
 * takes user access tokens only.
 */
export type Door = 'rest' | 'graphql' | 'ws';

export interface Authenticator {
  /** The caller behind an `Authorization` value, or UNAUTHENTICATED. */
  authenticate(header: string | undefined, door: Door, log?: Logger): Promise<Principal>;
}

/** Reads `Authorization: Bearer <token>`; undefined when absent, null when malformed. */
export function bearerToken(header: string | undefined): string | undefined | null {
  if (header === undefined || header.trim() === '') return undefined;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/** Builds the one authenticator every door uses. */
export function createAuthenticator(config: Config, keys: SecretKeyVerifier, operators: Pick<OperatorService, 'verify'>): Authenticator {
  const developer = async (token: string, log?: Logger): Promise<Principal> => ({ kind: 'developer', ...(await keys.verify(token, log)) });
  const user = async (token: string): Promise<Principal> => ({ kind: 'user', ...(await verifyUserTokenClaims(config, token)) });
  return {
    async authenticate(header, door, log) {
      const token = bearerToken(header);
      switch (door) {
        case 'rest':
          if (token === undefined) throw new AppError('UNAUTHENTICATED', 'Missing bearer token');
          if (token === null) throw new AppError('UNAUTHENTICATED', 'Invalid secret key');
          return developer(token, log);
        case 'ws':
          if (!token) throw new AppError('UNAUTHENTICATED', 'Missing access token');
          return user(token);
        case 'graphql':
          if (token === undefined) return ANONYMOUS;
          if (token === null) throw new AppError('UNAUTHENTICATED', 'Invalid authorization header');
          if (token.startsWith('sk_')) return developer(token, log);
          if (safeEqual(token, config.adminToken)) return { kind: 'admin', operator: ROOT_OPERATOR };
          if (token.startsWith(OPERATOR_TOKEN_PREFIX)) return { kind: 'admin', operator: await operators.verify(token, log) };
          return user(token);
        default: {
          const never: never = door;
          throw new Error(`unknown door ${String(never)}`);
        }
      }
    },
  };
}
