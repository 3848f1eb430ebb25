// The typed client's types are generated from the contract (schema/openapi.yaml) with
// openapi-typescript; this fails when the committed file differs from what the contract makes
// (fix: `npm run client:generate`), so the client cannot drift from the gateway.
import { readFileSync } from 'node:fs';
import { CONTRACT, OUTPUT, generateTypes } from '../../clients/typescript/scripts/generate-types.mjs';
import { EVENT_TYPES as CLIENT_EVENT_TYPES, isEventType, type GatewayEvent, type WebhookEvent } from '@wallet-gateway/client';
import { EVENT_TYPES } from '../../src/events/events.js';

test('clients/typescript/src/generated/openapi.ts is what openapi-typescript makes of schema/openapi.yaml', async () => {
  expect(CONTRACT).toMatch(/schema\/openapi\.yaml$/);
  const committed = readFileSync(OUTPUT, 'utf8');
  const generated = await generateTypes();
  // One line, not a diff of 1700: the fix is the same whatever changed.
  if (committed !== generated) throw new Error('clients/typescript/src/generated/openapi.ts is stale: run `npm run client:generate` and commit it');
  expect(committed).toBe(generated);
});

test('the generated types carry every path, every event type and the webhooks of the contract', () => {
  const source = readFileSync(OUTPUT, 'utf8');
  for (const path of ['/api/v1/wallet/payment-requests', '/api/v1/webhook-endpoints/{endpointId}/enable', '/api/v1/webhook-endpoints/{endpointId}/test']) {
    expect(source).toContain(`"${path}": {`);
  }
  expect(source).toMatch(/export interface webhooks \{/);
  for (const type of ['payment_request.created', 'payment_request.approved', 'payment_request.rejected', 'payment_request.cancelled', 'payment_request.expired', 'transaction.refunded', 'webhook.test']) {
    expect(source).toContain(`"${type}": {`);
  }
});

// The client's event unions come from the contract's `webhooks` section: checked here against the
// gateway's registry at compile time (`npm run typecheck` fails on a type missing on either side).
type RegistryType = (typeof EVENT_TYPES)[number];
const everyRegistryTypeIsAnEvent: readonly GatewayEvent['type'][] = EVENT_TYPES;
const everyEventIsInTheRegistry = (type: GatewayEvent['type']): RegistryType => type;
const testIsOnlyAWebhook = (event: WebhookEvent): GatewayEvent['type'] | 'webhook.test' => event.type;

test("the client's GatewayEvent union is exactly the gateway's event types, and WebhookEvent adds webhook.test", () => {
  expect(everyRegistryTypeIsAnEvent).toHaveLength(EVENT_TYPES.length);
  expect(EVENT_TYPES.map(everyEventIsInTheRegistry)).toEqual([...EVENT_TYPES]);
  expect(testIsOnlyAWebhook({ type: 'webhook.test' } as WebhookEvent)).toBe('webhook.test');
});

test("the client's run-time list of event types (what `listen --events` checks) is the gateway's registry", () => {
  expect([...CLIENT_EVENT_TYPES]).toEqual([...EVENT_TYPES]);
  expect(isEventType('payment_request.created')).toBe(true);
  expect(isEventType('webhook.test')).toBe(false);
  expect(isEventType('payment_request.paid')).toBe(false);
});
