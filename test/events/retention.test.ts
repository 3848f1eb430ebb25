import { useTestApp, factories, type TestApp } from '../helpers/app.js';
import { approve, requestPayment } from '../helpers/payments.js';

let app: TestApp;
useTestApp({ env: { EVENT_RETENTION_DAYS: '30', WEBHOOK_DELIVERY_RETENTION_DAYS: '7', IDEMPOTENCY_RETENTION_HOURS: '48' } }, (x) => ({ app } = x));

const sql = <T extends object = Record<string, unknown>>(text: string, params: unknown[] = []) => app.db.orm.em.fork().execute<T[]>(text, params);

test('retention deletes old events (not a request’s latest, not one with a kept delivery), finished deliveries with their attempts, old idempotency records; never the audit log', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const a = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1); // created, approved: created goes
  expect((await approve(app.baseUrl, user.token, a)).body.errors).toBeUndefined();
  const b = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1); // created, approved: created has a pending delivery, stays
  expect((await approve(app.baseUrl, user.token, b)).body.errors).toBeUndefined();
  const c = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1); // created only: its latest, stays
  const eventsOf = async (id: string) =>
    (await sql<{ id: string; sequence: number }>('select id, sequence from events where payment_request_id = ? order by sequence', [id])).map((e) => e.sequence);
  const [bCreated] = await sql<{ id: string }>('select id from events where payment_request_id = ? and sequence = 1', [b]);
  const [aApproved] = await sql<{ id: string }>('select id from events where payment_request_id = ? and sequence = 2', [a]);
  // A disabled endpoint (the delivery worker leaves it alone) with an old finished delivery and attempt, and an old pending one.
  const endpoint = `we_${'r'.repeat(24)}${Date.now().toString(36)}`;
  await sql(`insert into webhook_endpoints (id, developer_id, url, secret_enc, status) values (?, ?, 'https://example.com/hook', 'x', 'DISABLED')`, [
    endpoint,
    dev.developerId,
  ]);
  const [done] = await sql<{ id: string }>(
    `insert into webhook_deliveries (event_id, endpoint_id, subject_id, sequence, status) values (?, ?, ?, 2, 'DELIVERED') returning id::text`,
    [aApproved!.id, endpoint, a],
  );
  await sql(`insert into webhook_attempts (delivery_id, event_id, endpoint_id, attempted_at, http_status, duration_ms) values (?, ?, ?, now(), 200, 5)`, [
    done!.id,
    aApproved!.id,
    endpoint,
  ]);
  await sql(`insert into webhook_deliveries (event_id, endpoint_id, subject_id, sequence, status) values (?, ?, ?, 1, 'PENDING')`, [
    bCreated!.id,
    endpoint,
    b,
  ]);
  await sql(`insert into idempotency_keys (developer_id, key, fingerprint, state) values (?, 'retention-1', 'x', 'IN_PROGRESS')`, [dev.developerId]);
  const auditBefore = (await sql<{ n: number }>('select count(*)::int as n from audit_log'))[0]!.n;
  await sql(`update events set created_at = now() - interval '31 days' where payment_request_id = any(array[?]::uuid[])`, [[a, b, c]]);
  await sql(`update webhook_deliveries set created_at = now() - interval '8 days' where endpoint_id = ?`, [endpoint]);
  await sql(`update idempotency_keys set created_at = now() - interval '30 hours' where developer_id = ?`, [dev.developerId]);

  const removed = await app.gateway.maintenance.run();
  expect(removed).toMatchObject({ webhookDeliveries: 1, webhookAttempts: 1 });
  expect(removed.events).toBeGreaterThanOrEqual(1);
  // Records of 30 hours are within the configured 48.
  expect((await sql<{ n: number }>('select count(*)::int as n from idempotency_keys where developer_id = ?', [dev.developerId]))[0]!.n).toBe(1);
  expect(await eventsOf(a)).toEqual([2]);
  expect(await eventsOf(b)).toEqual([1, 2]);
  expect(await eventsOf(c)).toEqual([1]);
  expect(await sql('select status from webhook_deliveries where endpoint_id = ?', [endpoint])).toEqual([{ status: 'PENDING' }]);
  expect((await sql<{ n: number }>('select count(*)::int as n from audit_log'))[0]!.n).toBe(auditBefore);

  await sql(`update idempotency_keys set created_at = now() - interval '49 hours' where developer_id = ?`, [dev.developerId]);
  expect((await app.gateway.maintenance.run()).idempotencyKeys).toBeGreaterThanOrEqual(1);
  expect((await sql<{ n: number }>('select count(*)::int as n from idempotency_keys where developer_id = ?', [dev.developerId]))[0]!.n).toBe(0);
  // The next event of a request goes on from its latest kept one.
  expect((await approve(app.baseUrl, user.token, c)).body.errors).toBeUndefined();
  expect(await eventsOf(c)).toEqual([1, 2]);
});
