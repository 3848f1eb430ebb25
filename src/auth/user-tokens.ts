import { SignJWT, jwtVerify } from 'jose';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';

/** Mints a user access token (HS256, `sub` = user id). The wallet's identity service does this in production. */
export async function mintUserToken(config: Config, userId: string, ttlSeconds = 3600): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(userId)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .sign(new TextEncoder().encode(config.userTokenSecret));
}

/** Verifies a user access token and returns the user id; `exp` is required. */
export async function verifyUserToken(config: Config, token: string): Promise<string> {
  return (await verifyUserTokenClaims(config, token)).userId;
}

/**
 * Verifies a user access token and returns the user id and when the token expires (epoch ms), for
 * long-lived connections that must end with their token.
 */
export async function verifyUserTokenClaims(config: Config, token: string): Promise<{ userId: string; expiresAt: number }> {
  try {
    const { payload } = await jwtVerify(token, new TextEncoder().encode(config.userTokenSecret), {
      algorithms: ['HS256'],
      requiredClaims: ['exp', 'sub'],
    });
    if (typeof payload.sub !== 'string' || payload.sub.length === 0) throw new Error('no subject');
    return { userId: payload.sub, expiresAt: payload.exp! * 1000 };
  } catch {
    throw new AppError('UNAUTHENTICATED', 'Invalid access token');
  }
}
