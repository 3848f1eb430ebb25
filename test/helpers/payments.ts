// Helpers of the money and state-machine tests (test/payment-requests, test/http, test/rest/idempotency): create, decide and
// read payment requests, and read balances and the ledger straight from the database. The REST
// contract tests use ./rest.ts, whose wrappers return the raw HttpResult.
import { TEST_PIN, gql, http } from './app.js';
import type { Database } from '../../src/db/database.js';
import { checkLedger } from '../../src/ledger/ledger-check.js';
import { sleep } from './expect.js';

/** Creates a payment request through REST and returns its id. */
export async function requestPayment(
  baseUrl: string,
  secretKey: string,
  walletId: string,
  amount = 10,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const res = await http(baseUrl, '/api/v1/wallet/request-payment', {
    token: secretKey,
    body: { walletId, amount, description: 'Test order', merchantName: 'Test Shop', ...extra },
  });
  if (res.status !== 200) throw new Error(`request-payment answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.paymentRequestId as string;
}

/** The approve mutation with a PIN (the wallet app's). */
export const APPROVE_WITH_PIN =
  'mutation($id: ID!, $pin: String!) { approvePaymentRequest(id: $id, verification: { pin: $pin }) { id status transactionId } }';

/** The wallet app's approve mutation over HTTP GraphQL, verified with the wallet's PIN (the factories' TEST_PIN unless told). */
export function approve(baseUrl: string, userToken: string, id: string, pin: string = TEST_PIN) {
  return gql(baseUrl, APPROVE_WITH_PIN, { id, pin }, userToken);
}

/** The wallet app's reject mutation over HTTP GraphQL. */
export function reject(baseUrl: string, userToken: string, id: string) {
  return gql(baseUrl, 'mutation($id: ID!) { rejectPaymentRequest(id: $id) { id status } }', { id }, userToken);
}

/** The developer's cancel through REST. */
export function cancel(baseUrl: string, secretKey: string, id: string) {
  return http(baseUrl, `/api/v1/wallet/payment-request/${id}/cancel`, { method: 'POST', token: secretKey });
}

/** The developer's status read through REST. */
export async function statusOf(baseUrl: string, secretKey: string, id: string) {
  const res = await http(baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: secretKey });
  return res.body;
}

/** Reads balances straight from the database. */
export async function balances(db: Database, walletId: string, developerId: string) {
  const em = db.orm.em.fork();
  const [w] = await em.execute<Array<{ balance: string }>>('select balance from wallets where id = ?', [walletId]);
  const [d] = await em.execute<Array<{ balance: string }>>('select coalesce(sum(balance), 0) as balance from developer_balances where developer_id = ?', [developerId]);
  return { wallet: Number(w!.balance), developer: Number(d!.balance) };
}

/**
 * The ledger invariant: for every wallet and every developer the sum of its ledger entries
 * equals its balance. Returns the accounts that disagree (none when consistent), from the same
 * check internal tools run as `ledgerCheck`.
 */
export async function ledgerMismatches(db: Database): Promise<unknown[]> {
  return (await checkLedger(db.orm.em.fork())).mismatches;
}

/** Counts rows of a table matching a payment request. */
export async function countTransactions(db: Database, paymentRequestId: string): Promise<number> {
  const [row] = await db.orm.em
    .fork()
    .execute<Array<{ n: string }>>('select count(*) as n from transactions where payment_request_id = ?', [paymentRequestId]);
  return Number(row!.n);
}

/** Waits until the clock has passed `at` (e.g. a payment request's `expiresAt`): the moment an expiry test waits for. */
export async function untilPast(at: string | Date): Promise<void> {
  const wait = new Date(at).getTime() - Date.now() + 5;
  if (wait > 0) await sleep(wait);
}
