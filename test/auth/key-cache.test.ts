import { useTestApp, factories, http, type TestApp } from '../helpers/app.js';

// Verifying a key must not cost a database round trip on every request.
let app: TestApp;
useTestApp({ env: { KEY_CACHE_TTL_MS: '4000' } }, (x) => ({ app } = x));

test('a verified key is served from the cache: one secret_keys read for many requests', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user();
  const sql: string[] = [];
  const knex = app.db.orm.em.getKnex();
  const listener = (q: { sql: string }) => sql.push(q.sql);
  knex.on('query', listener);
  const started = performance.now();
  try {
    for (let i = 0; i < 10; i++) {
      const res = await http(app.baseUrl, `/api/v1/account/${user.username}`, { token: dev.secretKey });
      expect(res.status).toBe(200);
    }
    const results = await Promise.all(Array.from({ length: 10 }, () => http(app.baseUrl, `/api/v1/account/${user.username}`, { token: dev.secretKey })));
    expect(results.every((r) => r.status === 200)).toBe(true);
  } finally {
    knex.removeListener('query', listener);
  }
  // One read per KEY_CACHE_TTL_MS at most: exactly one while the twenty calls fit in one TTL (a
  // slow machine may need longer, and then the cache rightly reads the row again).
  const periods = 1 + Math.floor((performance.now() - started) / app.config.keyCacheTtlMs);
  const reads = sql.filter((s) => s.includes('secret_keys')).length;
  expect(reads).toBeGreaterThanOrEqual(1);
  expect(reads).toBeLessThanOrEqual(periods);
});

test('the cache answers only the byte-identical key: a cached key altered anywhere is still refused', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user();
  const path = `/api/v1/account/${user.username}`;
  expect((await http(app.baseUrl, path, { token: dev.secretKey })).status).toBe(200); // cached now
  const flip = (s: string, i: number): string => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
  const [header, payload, signature] = dev.secretKey.split('.') as [string, string, string];
  const altered = [
    flip(dev.secretKey, dev.secretKey.length - 1),
    `${header}.${payload}.${flip(signature, 3)}`,
    `${header}.${flip(payload, 5)}.${signature}`,
    `${dev.secretKey} `.trim() + '=',
  ];
  for (const token of altered) {
    const res = await http(app.baseUrl, path, { token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ statusCode: 401, message: 'Invalid secret key' });
  }
  expect((await http(app.baseUrl, path, { token: dev.secretKey })).status).toBe(200);
});
