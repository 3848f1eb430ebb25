import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

/**
 * A software authenticator for tests: a real ES256 (P-256) key pair from node:crypto, and the
 * bytes a browser and a platform authenticator would produce — clientDataJSON, authenticator
 * data, an attestation object (`none`) at registration and a signed assertion afterwards — in
 * the JSON form `navigator.credentials` answers with (base64url fields). Nothing is mocked: the
 * gateway verifies these signatures as it would a phone's.
 */

// ---------------------------------------------------------------- a little CBOR (RFC 8949)

type Cbor = number | string | Uint8Array | Map<number | string, Cbor> | { [key: string]: Cbor };

function head(major: number, n: number): Buffer {
  if (n < 24) return Buffer.from([(major << 5) | n]);
  if (n < 0x100) return Buffer.from([(major << 5) | 24, n]);
  if (n < 0x10000) return Buffer.from([(major << 5) | 25, n >> 8, n & 0xff]);
  const b = Buffer.alloc(5);
  b[0] = (major << 5) | 26;
  b.writeUInt32BE(n, 1);
  return b;
}

/** Encodes integers, text, byte strings and maps: all a COSE key and an attestation object need. */
export function cbor(value: Cbor): Buffer {
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === 'string') {
    const text = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, text.length), text]);
  }
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), value]);
  const entries = value instanceof Map ? [...value.entries()] : Object.entries(value);
  return Buffer.concat([head(5, entries.length), ...entries.flatMap(([k, v]) => [cbor(k), cbor(v)])]);
}

// ---------------------------------------------------------------- the authenticator

const b64url = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url');
const sha256 = (data: Uint8Array | string): Buffer => createHash('sha256').update(data).digest();

/** Authenticator-data flags (WebAuthn §6.1). */
const UP = 0x01;
const UV = 0x04;
const AT = 0x40;

export interface CeremonyOptions {
  /** The page's origin written into clientDataJSON (default: the authenticator's). */
  origin?: string;
  /** The relying-party id hashed into the authenticator data (default: the authenticator's). */
  rpId?: string;
  /** User verified (default true). */
  userVerified?: boolean;
  /** The sign counter to report (default: one more than the last). */
  counter?: number;
  /** Sign with another key than the registered one. */
  signWith?: KeyObject;
}

/** Registration answer in the JSON form of `PublicKeyCredential.toJSON()` (attestation `none`). */
export interface RegistrationResponse {
  id: string;
  rawId: string;
  type: 'public-key';
  response: { clientDataJSON: string; attestationObject: string; transports: string[] };
  clientExtensionResults: Record<string, never>;
  authenticatorAttachment: 'platform';
}

/** Assertion in the JSON form of `PublicKeyCredential.toJSON()`. */
export interface AssertionResponse {
  id: string;
  rawId: string;
  type: 'public-key';
  response: { clientDataJSON: string; authenticatorData: string; signature: string; userHandle?: string };
  clientExtensionResults: Record<string, never>;
  authenticatorAttachment: 'platform';
}

/** One passkey on a software authenticator: an ES256 key pair and its credential id. */
export class SoftPasskey {
  readonly keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  readonly credentialId: Buffer = randomBytes(32);
  counter = 0;

  constructor(
    readonly origin = 'http://localhost:3000',
    readonly rpId = 'localhost',
  ) {}

  get id(): string {
    return b64url(this.credentialId);
  }

  /** The public key as a COSE_Key (EC2, P-256, ES256). */
  private coseKey(): Buffer {
    const jwk = this.keys.publicKey.export({ format: 'jwk' });
    return cbor(
      new Map<number, Cbor>([
        [1, 2], // kty: EC2
        [3, -7], // alg: ES256
        [-1, 1], // crv: P-256
        [-2, Buffer.from(jwk.x as string, 'base64url')],
        [-3, Buffer.from(jwk.y as string, 'base64url')],
      ]),
    );
  }

  private authData(rpId: string, flags: number, counter: number, attested?: Buffer): Buffer {
    const count = Buffer.alloc(4);
    count.writeUInt32BE(counter >>> 0);
    return Buffer.concat([sha256(rpId), Buffer.from([flags]), count, ...(attested ? [attested] : [])]);
  }

  /** Answers creation options (from passkeyRegistrationOptions) as `navigator.credentials.create` would. */
  register(options: { challenge: string }, o: CeremonyOptions = {}): RegistrationResponse {
    const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.create', challenge: options.challenge, origin: o.origin ?? this.origin, crossOrigin: false }));
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    const attested = Buffer.concat([Buffer.alloc(16) /* AAGUID: none */, idLength, this.credentialId, this.coseKey()]);
    const flags = UP | AT | (o.userVerified === false ? 0 : UV);
    const authData = this.authData(o.rpId ?? this.rpId, flags, this.counter, attested);
    const attestationObject = cbor({ fmt: 'none', attStmt: {}, authData });
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: { clientDataJSON: b64url(clientData), attestationObject: b64url(attestationObject), transports: ['internal'] },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  /** Signs request options (from approvalChallenge) as `navigator.credentials.get` would; the counter goes up by one unless told. */
  assert(options: { challenge: string }, o: CeremonyOptions = {}): AssertionResponse {
    this.counter = o.counter ?? this.counter + 1;
    const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: options.challenge, origin: o.origin ?? this.origin, crossOrigin: false }));
    const authData = this.authData(o.rpId ?? this.rpId, UP | (o.userVerified === false ? 0 : UV), this.counter);
    // ES256: ECDSA over SHA-256 of authData ‖ SHA-256(clientDataJSON), DER-encoded (node's default).
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientData)]), o.signWith ?? this.keys.privateKey);
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: { clientDataJSON: b64url(clientData), authenticatorData: b64url(authData), signature: b64url(signature) },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }
}
