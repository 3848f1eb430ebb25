// REST-contract helpers for test/rest: one wrapper per endpoint returning the raw HttpResult
// (status, headers, body) so tests can assert on every detail of the answer. The money and state
// machine tests use ./payments.ts, whose helpers return what those tests reason about instead.
import { TEST_PIN, gql, http, type TestApp } from './app.js';
import { UUID_RE, type HttpResult } from './expect.js';

/** The REST prefix. */
export const API = '/api/v1';

/**
 * Environment of the REST suites: rate limits far above anything a test sends, so that no
 * answer depends on how fast the machine runs the calls (the limits have their own tests).
 */
export const REST_TEST_ENV: Readonly<Record<string, string>> = {
  RATE_LIMIT_PER_SECOND: '1000000',
  LOOKUP_LIMIT_PER_MINUTE: '1000000',
};

/** A uuid no row will ever have. */
export const UNKNOWN_UUID = '00000000-0000-4000-8000-000000000000';

export interface PaymentRequestBody {
  walletId?: unknown;
  amount?: unknown;
  description?: unknown;
  merchantName?: unknown;
  [extra: string]: unknown;
}

/** POST /wallet/request-payment with a JSON body. */
export function requestPayment(app: Pick<TestApp, 'baseUrl'>, token: string | undefined, body: unknown): Promise<HttpResult> {
  return http(app.baseUrl, `${API}/wallet/request-payment`, { method: 'POST', ...(token ? { token } : {}), body });
}

/** POST /wallet/request-payment with a body sent byte for byte (JSON content type unless told). */
export function requestPaymentRaw(
  app: Pick<TestApp, 'baseUrl'>,
  token: string,
  rawBody: string,
  contentType = 'application/json',
): Promise<HttpResult> {
  return http(app.baseUrl, `${API}/wallet/request-payment`, {
    method: 'POST',
    token,
    rawBody,
    headers: { 'content-type': contentType },
  });
}

/** A valid request-payment body for a wallet. */
export function validBody(walletId: string, overrides: PaymentRequestBody = {}): PaymentRequestBody {
  return { walletId, amount: 12.5, description: 'Order #1001', merchantName: 'Acme Coffee', ...overrides };
}

/** Creates a PENDING payment request through REST and returns its id. */
export async function createPaymentRequest(
  app: Pick<TestApp, 'baseUrl'>,
  token: string,
  walletId: string,
  overrides: PaymentRequestBody = {},
): Promise<string> {
  const res = await requestPayment(app, token, validBody(walletId, overrides));
  if (res.status !== 200) throw new Error(`request-payment failed: ${res.status} ${JSON.stringify(res.body)}`);
  const id = res.body.paymentRequestId as string;
  expect(id).toMatch(UUID_RE);
  return id;
}

export const getStatus = (app: Pick<TestApp, 'baseUrl'>, token: string | undefined, id: string): Promise<HttpResult> =>
  http(app.baseUrl, `${API}/wallet/payment-request/${id}`, token ? { token } : {});

export const cancel = (app: Pick<TestApp, 'baseUrl'>, token: string | undefined, id: string): Promise<HttpResult> =>
  http(app.baseUrl, `${API}/wallet/payment-request/${id}/cancel`, { method: 'POST', ...(token ? { token } : {}) });

export const getTransaction = (app: Pick<TestApp, 'baseUrl'>, token: string | undefined, id: string): Promise<HttpResult> =>
  http(app.baseUrl, `${API}/wallet/transaction/${id}`, token ? { token } : {});

export const lookupAccount = (app: Pick<TestApp, 'baseUrl'>, token: string | undefined, identifier: string): Promise<HttpResult> =>
  http(app.baseUrl, `${API}/account/${identifier}`, token ? { token } : {});

const APPROVE = 'mutation($id: ID!, $pin: String!){ approvePaymentRequest(id:$id, verification: { pin: $pin }){ id status transactionId } }';

/** The wallet's owner approves in the mobile app (GraphQL, user token, the wallet's PIN: TEST_PIN unless told); returns the transaction id. */
export async function approve(app: Pick<TestApp, 'baseUrl'>, userToken: string, id: string, pin: string = TEST_PIN): Promise<string> {
  const res = await gql(app.baseUrl, APPROVE, { id, pin }, userToken);
  if (res.status !== 200 || res.body?.errors) throw new Error(`approve failed: ${res.status} ${JSON.stringify(res.body)}`);
  const approved = res.body.data.approvePaymentRequest as { id: string; status: string; transactionId: string };
  expect(approved).toEqual({ id, status: 'APPROVED', transactionId: expect.stringMatching(UUID_RE) });
  return approved.transactionId;
}

/** Rows in a table, read straight from the database. */
export async function countRows(app: Pick<TestApp, 'db'>, table: 'payment_requests' | 'transactions'): Promise<number> {
  const rows = await app.db.orm.em.fork().execute<Array<{ n: number | string }>>(`select count(*)::int as n from ${table}`);
  return Number(rows[0]!.n);
}
