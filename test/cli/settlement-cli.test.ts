// The CLI's settlement commands: the operator's (fees:set, payouts:run, payout:paid, payout:failed,
// balance:adjust, on the database) and the developer's (balance, payouts, payout:report, over HTTP
// with its key).
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { useTestApp, factories, type TestApp } from '../helpers/app.js';
import { cliDatabaseEnv, runCli } from '../helpers/cli.js';
import { approve, requestPayment } from '../helpers/payments.js';

let app: TestApp;
useTestApp({ env: { RATE_LIMIT_PER_SECOND: '100000' } }, (x) => ({ app } = x));

/** A command's one JSON line (its stderr when it printed none). */
const json = (r: { stdout: string; stderr: string } | string) => {
  const out = typeof r === 'string' ? r : r.stdout;
  if (out.trim() === '' && typeof r !== 'string') throw new Error(`no output; stderr: ${r.stderr}`);
  return JSON.parse(out.trim());
};

test('an operator sets a fee, runs the payouts and marks them; the developer reads its balance, payouts and report', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const adminEnv = cliDatabaseEnv(app.database);
  const devEnv = { PATH: process.env.PATH, HOME: process.env.HOME, WALLET_GATEWAY_KEY: dev.secretKey, WALLET_GATEWAY_URL: app.baseUrl };

  const fee = await runCli(['fees:set', '--developer', dev.developerId, '--percent', '2.5', '--fixed', '0.10'], adminEnv);
  expect([fee.code, json(fee.stdout)]).toEqual([0, { percent: 2.5, fixed: 0.1, isDefault: false, updatedAt: expect.any(String) }]);
  const bad = await runCli(['fees:set', '--developer', dev.developerId, '--percent', '12', '--fixed', '0'], adminEnv);
  expect([bad.code, bad.stderr]).toEqual([2, expect.stringMatching(/percent must be at most 10/)]);

  for (const amount of [20, 4]) await approve(app.baseUrl, user.token, await requestPayment(app.baseUrl, dev.secretKey, user.walletId, amount));
  const balance = await runCli(['balance'], devEnv);
  expect(json(balance.stdout)).toEqual({ balances: [{ currency: 'ETB', available: 23.2, inPayouts: 0 }] }); // 20 - 0.60, 4 - 0.20

  const adjusted = await runCli(['balance:adjust', '--developer', dev.developerId, '--currency', 'ETB', '--amount=-0.30', '--reason', 'Correction'], adminEnv);
  expect(json(adjusted)).toEqual(expect.objectContaining({ type: 'adjustment', amount: -0.3, net: -0.3, reference: 'Correction' }));

  const run = await runCli(['payouts:run'], adminEnv);
  expect(json(run.stdout).payouts).toBeGreaterThanOrEqual(1);
  const listed = json((await runCli(['payouts', '--status', 'pending'], devEnv)).stdout);
  expect(listed.data).toEqual([expect.objectContaining({ amount: 22.9, itemCount: 3, status: 'PENDING' })]);
  const payoutId = listed.data[0].id as string;

  const report = await runCli(['payout:report', payoutId], devEnv);
  expect(report.code).toBe(0);
  expect(report.stdout.split('\r\n')[0]).toBe('balance_transaction_id,type,created_at,transaction_id,payment_request_id,reference,currency,gross,fee,net,consent_receipt');
  expect(report.stdout.split('\r\n')).toHaveLength(5);
  const dir = await mkdtemp(path.join(tmpdir(), 'wg-report-'));
  const file = path.join(dir, 'payout.csv');
  const saved = await runCli(['payout:report', payoutId, '--out', file], devEnv);
  expect(json(saved.stdout)).toEqual({ file, bytes: Buffer.byteLength(report.stdout) });
  expect(await readFile(file, 'utf8')).toBe(report.stdout);

  const paid = await runCli(['payout:paid', '--payout', payoutId, '--bank-reference', 'BANK-77'], adminEnv);
  expect(json(paid.stdout)).toEqual({ id: payoutId, status: 'PAID', paidAt: expect.any(String), bankReference: 'BANK-77' });
  const again = await runCli(['payout:failed', '--payout', payoutId, '--reason', 'late'], adminEnv);
  expect([again.code, again.stderr]).toEqual([2, expect.stringMatching(/Only a PENDING payout/)]);

  const unknown = await runCli(['payout:report', '00000000-0000-4000-8000-000000000000'], devEnv);
  expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringMatching(/Payout not found/)]);
  expect((await runCli(['payouts', '--status', 'SENT'], devEnv)).code).toBe(2);
});
