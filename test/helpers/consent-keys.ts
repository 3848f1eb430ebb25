import { createPrivateKey, createPublicKey } from 'node:crypto';

/**
 * Fixed Ed25519 signing keys for tests only (never used outside test/): the key every test app
 * signs consent receipts with, and another one for rotation tests.
 */
export const TEST_CONSENT_KEY = `-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIDBg4xu1Ewq0y/tR3dtWI8Ps1zFW3gqXcj9J5kIduviN
-----END PRIVATE KEY-----
`;

export const OTHER_TEST_CONSENT_KEY = `-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIEE9Heqrt25JGQvZUR7fOHCwpR5reEDHEyRS5afqvByz
-----END PRIVATE KEY-----
`;

/** The public half of a private key, as SPKI PEM (what CONSENT_PREVIOUS_PUBLIC_KEYS takes). */
export const publicPemOf = (privatePem: string): string =>
  createPublicKey(createPrivateKey(privatePem)).export({ type: 'spki', format: 'pem' }).toString();
