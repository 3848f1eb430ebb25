import { PAYMENT_REQUEST_STATUS_FIELDS } from '../payment-requests/payment-request.types.js';
import { TRANSACTION_FIELDS } from '../transactions/transaction.types.js';

/** One REST route: a line of the table. The route only maps path and body to GraphQL variables. */
export interface RestRoute {
  readonly method: 'GET' | 'POST';
  /** Koa router path under /api/v1. */
  readonly path: string;
  /** The GraphQL operation this route runs; its single root field is the response body. */
  readonly operation: string;
  /** Whether the route reads a JSON body. */
  readonly body: boolean;
  /** Path parameters, body and Idempotency-Key → operation variables. */
  variables(params: Record<string, string>, body: unknown, idempotencyKey: string | null): Record<string, unknown>;
}

const PAYMENT_REQUEST_FIELDS = PAYMENT_REQUEST_STATUS_FIELDS.join(' ');

/** The REST surface of /api/v1 (SPEC §7). */
export const REST_ROUTES: readonly RestRoute[] = [
  {
    method: 'POST',
    path: '/wallet/request-payment',
    body: true,
    operation: `mutation RequestPayment($input: RequestPaymentInput!, $idempotencyKey: String) {
      requestPayment(input: $input, idempotencyKey: $idempotencyKey) { success message paymentRequestId status expiresAt }
    }`,
    variables: (_params, body, idempotencyKey) => ({ input: body, idempotencyKey }),
  },
  {
    method: 'GET',
    path: '/wallet/payment-request/:requestId',
    body: false,
    operation: `query PaymentRequest($id: ID!) { paymentRequest(id: $id) { ${PAYMENT_REQUEST_FIELDS} } }`,
    variables: (params) => ({ id: params.requestId }),
  },
  {
    method: 'POST',
    path: '/wallet/payment-request/:requestId/cancel',
    body: false,
    operation: `mutation CancelPaymentRequest($id: ID!) { cancelPaymentRequest(id: $id) { ${PAYMENT_REQUEST_FIELDS} } }`,
    variables: (params) => ({ id: params.requestId }),
  },
  {
    method: 'GET',
    path: '/wallet/transaction/:transactionId',
    body: false,
    operation: `query Transaction($id: ID!) {
      transaction(id: $id) { ${TRANSACTION_FIELDS.join(' ')} }
    }`,
    variables: (params) => ({ id: params.transactionId }),
  },
  {
    method: 'GET',
    path: '/account/:identifier',
    body: false,
    operation: `query WalletId($identifier: String!) { walletId(identifier: $identifier) { walletId } }`,
    variables: (params) => ({ identifier: params.identifier }),
  },
];
