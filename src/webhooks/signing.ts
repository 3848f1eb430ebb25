import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new signing secret in the Standard Webhooks form: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * One Standard Webhooks signature, by the specification's reference library (`standardwebhooks`,
 * what merchants verify with): `v1,` + base64 HMAC-SHA256, keyed with the secret's decoded
 * bytes, of `id.timestamp.body` (timestamp in seconds, body exactly as sent).
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  return new Webhook(secret).sign(id, new Date(timestamp * 1000), body);
}

/** The `webhook-signature` header: one signature per valid secret, space-separated (during a rotation, two). */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map((s) => signWebhook(s, id, timestamp, body)).join(' ');
}

/**
 * The Standard Webhooks headers of one message (a delivery, a test send, a `listen` forward):
 * its id, the current time in seconds, and one signature per secret over exactly `body`.
 */
export function webhookHeaders(secrets: readonly string[], id: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, id, timestamp, body),
  };
}
