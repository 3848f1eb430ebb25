import { startTestApp, factories, http, type TestApp } from '../helpers/app.js';

// Verifying a key must not cost a database round trip on every request.
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { KEY_CACHE_TTL_MS: '4000' } });
});
afterAll(async () => {
  await app.close();
});

test('a verified key is served from the cache: one secret_keys read for many requests', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user();
  const sql: string[] = [];
  const knex = app.db.orm.em.getKnex();
  const listener = (q: { sql: string }) => sql.push(q.sql);
  knex.on('query', listener);
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
  expect(sql.filter((s) => s.includes('secret_keys'))).toHaveLength(1);
});
