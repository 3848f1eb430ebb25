/**
 * The date filters' UTC offsets (#30 item 6, schemathesis' remaining contract gap): RFC 3339 and
 * the document's `date-time` format allow any offset up to ±23:59, PostgreSQL only ±15:59. The
 * gateway keeps refusing ±16:00 to ±23:59 with a 400 (never a server error) and the document
 * says so, in the TimeFilter schema (its date-time form's pattern) and in every createdFrom /
 * createdTo parameter: what the document accepts is exactly what the gateway accepts.
 */
import { useTestApp, http, type TestApp } from '../helpers/app.js';
import { openApi, openApiAjv } from '../helpers/openapi.js';

let app: TestApp;
let sk: string;
useTestApp({ developer: true }, (x) => ({ app, token: sk } = x));

const LISTS = ['/api/v1/wallet/payment-requests', '/api/v1/balance-transactions', '/api/v1/payouts'];
const OFFSETS = ['Z', '+00:00', '+03:00', '+15:59', '-15:59', '+16:00', '-16:00', '+23:59', '-23:59', '+15:60'];

test('every offset: the document accepts exactly what the gateway accepts, on every list with date filters', async () => {
  const timeFilter = openApiAjv().compile({ $ref: 'urn:wallet-gateway:openapi#/$defs/TimeFilter' });
  const seen: string[] = [];
  for (const offset of OFFSETS) {
    const value = `2026-11-22T18:00:00${offset}`;
    const documented = timeFilter(value) === true;
    for (const path of LISTS) {
      for (const name of ['createdFrom', 'createdTo']) {
        const res = await http(app.baseUrl, `${path}?${name}=${encodeURIComponent(value)}`, { token: sk });
        expect(res.status).toBeLessThan(500);
        seen.push(`${path} ${name}=${value}: gateway ${res.status === 200 ? 'accepts' : res.status}, document ${documented ? 'accepts' : 'refuses'}`);
        expect(`${path} ${name}=${value}: ${res.status === 200}`).toBe(`${path} ${name}=${value}: ${documented}`);
        if (res.status !== 200) expect(res.body).toEqual({ statusCode: 400, message: expect.stringContaining(`${name} must be an RFC 3339 date or date-time`) });
      }
    }
  }
  expect(seen.filter((s) => s.includes('+16:00') || s.includes('-23:59')).every((s) => s.includes('gateway 400, document refuses'))).toBe(true);
});

test('every createdFrom / createdTo parameter and the TimeFilter schema state the offset range', () => {
  const stated: string[] = [];
  for (const [template, item] of Object.entries<any>(openApi.paths)) {
    for (const op of Object.values<any>(item)) {
      for (const p of op?.parameters ?? []) {
        if (p.name === 'createdFrom' || p.name === 'createdTo') stated.push(`${template} ${p.name}: ${/±15:59/.test(p.description) && /±16:00/.test(p.description)}`);
      }
    }
  }
  expect(stated.length).toBeGreaterThanOrEqual(6);
  expect(stated.filter((s) => s.endsWith('false'))).toEqual([]);
  expect(openApi.components.schemas.TimeFilter.description).toMatch(/±15:59/);
});
