// Issue 11's "done when", end to end through GraphQL: an operator (own token) finds a payment by
// status, developer, wallet, phone and reference, follows it to its user and ledger entries,
// refunds part of it, sees that in the audit log under its own name, and ledgerCheck says ok.
import { useTestApp, factories, gql, type TestApp } from '../helpers/app.js';
import { approve, requestPayment } from '../helpers/payments.js';

let app: TestApp;
useTestApp({}, (x) => ({ app } = x));

test('an operator finds a payment, follows it, refunds part of it and finds that in the audit log under its name', async () => {
  const root = app.config.adminToken;
  const created = await gql(app.baseUrl, 'mutation { createOperator(name: "Support Sam") { operatorId token } }', {}, root);
  const { operatorId, token: sam } = created.body.data.createOperator as { operatorId: string; token: string };
  const f = factories(app);
  const dev = await f.developer('Journey Shop');
  const user = await f.user({ balance: 80 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 30, { reference: 'order-7731' });
  const tx = (await approve(app.baseUrl, user.token, id)).body.data.approvePaymentRequest.transactionId as string;

  const FIND = `query($f: PaymentRequestFilter) { paymentRequests(filter: $f) { nodes {
      id reference wallet { user { username } ledgerEntries { nodes { kind amount } } }
      transaction { id ledgerEntries { kind amount } } } } }`;
  for (const filter of [
    { status: 'APPROVED', developerId: dev.developerId },
    { walletId: user.walletId },
    { phone: user.phone },
    { reference: 'order-7731' },
  ]) {
    const res = await gql(app.baseUrl, FIND, { f: filter }, sam);
    expect(res.body.errors).toBeUndefined();
    const [node] = res.body.data.paymentRequests.nodes;
    expect(node).toMatchObject({ id, reference: 'order-7731', wallet: { user: { username: user.username } }, transaction: { id: tx } });
    expect(node.wallet.ledgerEntries.nodes).toEqual(expect.arrayContaining([{ kind: 'PAYMENT', amount: -30 }, { kind: 'TOPUP', amount: 80 }]));
    expect(node.transaction.ledgerEntries).toEqual(expect.arrayContaining([{ kind: 'PAYMENT', amount: -30 }, { kind: 'PAYMENT', amount: 30 }]));
  }

  const refund = await gql(app.baseUrl, 'mutation($id: ID!) { refundTransaction(id: $id, amount: 12.5) { status refundedAmount } }', { id: tx }, sam);
  expect(refund.body.data.refundTransaction).toEqual({ status: 'COMPLETED', refundedAmount: 12.5 });

  const audit = await gql(
    app.baseUrl,
    'query($o: String) { auditLog(filter: { operator: $o, operation: "refundTransaction" }) { nodes { actor operatorId arguments outcome } } }',
    { o: 'Support Sam' },
    sam,
  );
  expect(audit.body.data.auditLog.nodes).toEqual([
    { actor: 'Support Sam', operatorId, arguments: { id: tx, amount: 12.5 }, outcome: 'ok' },
  ]);
  const check = await gql(app.baseUrl, '{ ledgerCheck { ok mismatches { kind id } } }', {}, sam);
  expect(check.body.data.ledgerCheck).toEqual({ ok: true, mismatches: [] });
});
