// docs/merchants.md's reference against what the gateway serves (issue 33): its REST table names
// every operation of schema/openapi.yaml, with the fields the answers have, and its events
// paragraph names every event type.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { EVENT_TYPES } from '../../src/events/events.js';
import { ROOT } from '../helpers/cli.js';

const merchants = readFileSync(path.join(ROOT, 'docs', 'merchants.md'), 'utf8');
const openapi = parse(readFileSync(path.join(ROOT, 'schema', 'openapi.yaml'), 'utf8')) as {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
};
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
/** `/wallet/payment-request/{requestId}` and `/wallet/payment-request/{id}` are one path. */
const samePath = (p: string): string => p.replace(/\{[^}]+\}/g, '{}');

/** The REST table's rows: `METHOD /path` (query string cut off) and the row's text. */
function restRows(): Map<string, string> {
  const section = merchants.slice(merchants.indexOf('## REST endpoints'));
  const rows = new Map<string, string>();
  for (const line of section.split('\n')) {
    const m = /^\| `(GET|POST|PUT|PATCH|DELETE) (\/[^`?\s]*)/.exec(line);
    if (m) rows.set(`${m[1]} ${samePath(m[2]!)}`, line);
  }
  return rows;
}

test('the REST table of docs/merchants.md names every operation of schema/openapi.yaml under /api/v1, and no other', () => {
  const documented = [...restRows().keys()].sort();
  const served = Object.entries(openapi.paths)
    .filter(([p]) => p.startsWith('/api/v1/') && p !== '/api/v1/openapi.json')
    .flatMap(([p, ops]) => METHODS.filter((m) => m in ops).map((m) => `${m.toUpperCase()} ${samePath(p.slice('/api/v1'.length))}`))
    .sort();
  expect(documented).toEqual(served);
});

test('the REST table lists exactly the fields of the creation answer, the status body and the transaction body', () => {
  const rows = restRows();
  const fieldsIn = (row: string): string[] => {
    const m = /\| 200 `\{([^}]*)\}`/.exec(row);
    if (!m) throw new Error(`no answer in ${row}`);
    return m[1]!.split(',').map((f) => f.trim().split(':')[0]!.trim());
  };
  const properties = (schema: string): string[] => Object.keys(openapi.components.schemas[schema]!.properties!);
  expect(fieldsIn(rows.get('POST /wallet/request-payment')!)).toEqual(properties('PaymentRequestResponse'));
  expect(fieldsIn(rows.get('GET /wallet/payment-request/{}')!)).toEqual(properties('PaymentRequestStatus'));
  expect(fieldsIn(rows.get('GET /wallet/transaction/{}')!)).toEqual(properties('Transaction'));
});

test('"Events and webhooks" names every event type the gateway writes, and no other', () => {
  const start = merchants.indexOf('Every state change writes one event');
  const list = merchants.slice(start, merchants.indexOf('An event', start));
  // `payment_request.created`, `.approved`, …: a `.name` belongs to the family named last.
  let family = '';
  const named = [...list.matchAll(/`([a-z_]*)\.([a-z_]+)`/g)].map(([, f, name]) => {
    if (f) family = f;
    return `${family}.${name}`;
  });
  expect(named.sort()).toEqual([...EVENT_TYPES].sort());
});
