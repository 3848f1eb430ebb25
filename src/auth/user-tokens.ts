import { createSecretKey, type KeyObject } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { isUuid } from '../uuid.js';

/** The HMAC keys, imported once per secret (jose would import a byte array on every call). */
const hmacKeys = new Map<string, KeyObject>();
function hmacKey(secret: string): KeyObject {
  let key = hmacKeys.get(secret);
  if (!key) {
    key = createSecretKey(Buffer.from(secret, 'utf8'));
    hmacKeys.set(secret, key);
  }
  return key;
}

/** Mints a user access token (HS256, `sub` = user id). The wallet's identity service does this in production. */
export async function mintUserToken(config: Config, userId: string, ttlSeconds = 3600): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(userId)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .sign(new TextEncoder().encode(config.userTokenSecret));
}

/**
 * Verifies a user access token and returns the user id and when the token expires (epoch ms), for
 * long-lived connections that must end with their token.
 */
export async function verifyUserTokenClaims(config: Config, token: string): Promise<{ userId: string; expiresAt: number }> {
  try {
    const { payload } = await jwtVerify(token, hmacKey(config.userTokenSecret), {
      algorithms: ['HS256'],
      requiredClaims: ['exp', 'sub'],
    });
    // A user id is a UUID: anything else is not one of our users (and must not reach SQL as one).
    if (!isUuid(payload.sub)) throw new Error('subject is not a user id');
    return { userId: payload.sub, expiresAt: payload.exp! * 1000 };
  } catch {
    throw new AppError('UNAUTHENTICATED', 'Invalid access token');
  }
}
