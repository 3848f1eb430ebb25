import { PAYMENT_REQUEST_STATUS_FIELDS } from '../payment-requests/payment-request.types.js';
import { TRANSACTION_FIELDS } from '../transactions/transaction.types.js';
import type { Context as KoaContext } from 'koa';
import { replyWithQrCode } from './qr-reply.js';

/** A parsed query string: a repeated parameter arrives as a list. */
export type QueryParams = Record<string, string | string[] | undefined>;

/** One REST route: a line of the table. The route only maps path, query and body to GraphQL variables. */
export interface RestRoute {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** Koa router path under /api/v1. */
  readonly path: string;
  /** The GraphQL operation this route runs; its single root field is the response body. */
  readonly operation: string;
  /** Whether the route reads a JSON body. */
  readonly body: boolean;
  /** With `body`: the body may be absent (the operation's defaults apply). */
  readonly optionalBody?: boolean;
  /**
   * How a successful answer is sent when it is not the root field as JSON (GET routes only): the
   * QR route draws its `paymentUrl` as an image. Errors are the Error body as on every route.
   */
  readonly reply?: (ctx: KoaContext, value: unknown) => Promise<void>;
  /** Path parameters, body, Idempotency-Key and query → operation variables. */
  variables(params: Record<string, string>, body: unknown, idempotencyKey: string | null, query?: QueryParams): Record<string, unknown>;
}

/** A query parameter as one string (the first of a repeated one). */
const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** A list query parameter: repeated (`type=a&type=b`) or comma-separated (`type=a,b`). */
const list = (v: string | string[] | undefined): string[] | undefined =>
  v === undefined ? undefined : (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(',')).map((s) => s.trim());

/** An integer query parameter; anything else goes through as text, which the Int variable refuses with a 400. */
const integer = (v: string | string[] | undefined): number | string | undefined => {
  const s = one(v);
  return s !== undefined && /^\d{1,9}$/.test(s) ? Number(s) : s;
};

const WEBHOOK_ENDPOINT_FIELDS = 'id url events status disabledReason createdAt lastDeliveryAt lastDeliveryStatus pendingDeliveries';
const EVENT_FIELDS = 'id type createdAt data';
const EVENT_DETAIL_FIELDS = `${EVENT_FIELDS} deliveries { endpointId status attempts nextAttemptAt deliveredAt lastError }
  attempts { endpointId attemptedAt httpStatus error durationMs }`;

const PAYMENT_REQUEST_FIELDS = PAYMENT_REQUEST_STATUS_FIELDS.join(' ');

/** The REST surface of /api/v1 (SPEC §7). */
export const REST_ROUTES: readonly RestRoute[] = [
  {
    method: 'POST',
    path: '/wallet/request-payment',
    body: true,
    operation: `mutation RequestPayment($input: RequestPaymentInput!, $idempotencyKey: String) {
      requestPayment(input: $input, idempotencyKey: $idempotencyKey) { success message paymentRequestId status expiresAt paymentUrl }
    }`,
    variables: (_params, body, idempotencyKey) => ({ input: body, idempotencyKey }),
  },
  {
    method: 'POST',
    path: '/wallet/payment-links',
    body: true,
    operation: `mutation CreatePaymentLink($input: PaymentLinkInput!, $idempotencyKey: String) {
      createPaymentLink(input: $input, idempotencyKey: $idempotencyKey) { success message paymentRequestId status expiresAt paymentUrl }
    }`,
    variables: (_params, body, idempotencyKey) => ({ input: body, idempotencyKey }),
  },
  {
    method: 'GET',
    path: '/wallet/payment-request/:requestId/qr',
    body: false,
    operation: `query PaymentRequestQr($id: ID!) { paymentRequest(id: $id) { paymentUrl } }`,
    variables: (params) => ({ id: params.requestId }),
    reply: replyWithQrCode,
  },
  {
    method: 'POST',
    path: '/wallet/transaction/:transactionId/capture',
    body: true,
    optionalBody: true,
    operation: `mutation CaptureTransaction($id: ID!, $input: CaptureTransactionInput) {
      captureTransaction(id: $id, input: $input) { ${TRANSACTION_FIELDS.join(' ')} }
    }`,
    variables: (params, body) => ({ id: params.transactionId, input: body }),
  },
  {
    method: 'POST',
    path: '/wallet/transaction/:transactionId/void',
    body: false,
    operation: `mutation VoidTransaction($id: ID!) { voidTransaction(id: $id) { ${TRANSACTION_FIELDS.join(' ')} } }`,
    variables: (params) => ({ id: params.transactionId }),
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
  {
    method: 'GET',
    path: '/wallet/payment-requests',
    body: false,
    operation: `query SearchPaymentRequests($status: String, $reference: String, $createdFrom: String, $createdTo: String, $after: String, $limit: Int) {
      searchPaymentRequests(status: $status, reference: $reference, createdFrom: $createdFrom, createdTo: $createdTo, after: $after, limit: $limit) {
        data { ${PAYMENT_REQUEST_FIELDS} } hasMore nextAfter
      }
    }`,
    variables: (_params, _body, _key, query = {}) => ({
      status: one(query.status),
      reference: one(query.reference),
      createdFrom: one(query.createdFrom),
      createdTo: one(query.createdTo),
      after: one(query.after),
      limit: integer(query.limit),
    }),
  },
  {
    method: 'POST',
    path: '/webhook-endpoints',
    body: true,
    operation: `mutation CreateWebhookEndpoint($input: CreateWebhookEndpointInput!) {
      createWebhookEndpoint(input: $input) { ${WEBHOOK_ENDPOINT_FIELDS} secret }
    }`,
    variables: (_params, body) => ({ input: body }),
  },
  {
    method: 'GET',
    path: '/webhook-endpoints',
    body: false,
    operation: `query WebhookEndpoints { webhookEndpoints { data { ${WEBHOOK_ENDPOINT_FIELDS} } } }`,
    variables: () => ({}),
  },
  {
    method: 'DELETE',
    path: '/webhook-endpoints/:endpointId',
    body: false,
    operation: `mutation DeleteWebhookEndpoint($id: ID!) { deleteWebhookEndpoint(id: $id) { ${WEBHOOK_ENDPOINT_FIELDS} } }`,
    variables: (params) => ({ id: params.endpointId }),
  },
  {
    method: 'POST',
    path: '/webhook-endpoints/:endpointId/rotate-secret',
    body: false,
    operation: `mutation RotateWebhookEndpointSecret($id: ID!) { rotateWebhookEndpointSecret(id: $id) { ${WEBHOOK_ENDPOINT_FIELDS} secret } }`,
    variables: (params) => ({ id: params.endpointId }),
  },
  {
    method: 'POST',
    path: '/webhook-endpoints/:endpointId/enable',
    body: false,
    operation: `mutation EnableWebhookEndpoint($id: ID!) { enableWebhookEndpoint(id: $id) { ${WEBHOOK_ENDPOINT_FIELDS} } }`,
    variables: (params) => ({ id: params.endpointId }),
  },
  {
    method: 'POST',
    path: '/webhook-endpoints/:endpointId/test',
    body: false,
    operation: `mutation TestWebhookEndpoint($id: ID!) { testWebhookEndpoint(id: $id) { delivered status durationMs body error } }`,
    variables: (params) => ({ id: params.endpointId }),
  },
  {
    method: 'GET',
    path: '/events',
    body: false,
    operation: `query Events($after: String, $limit: Int, $type: [String!], $paymentRequestId: ID) {
      events(after: $after, limit: $limit, type: $type, paymentRequestId: $paymentRequestId) { data { ${EVENT_FIELDS} } hasMore nextAfter }
    }`,
    variables: (_params, _body, _key, query = {}) => ({
      after: one(query.after),
      limit: integer(query.limit),
      type: list(query.type),
      paymentRequestId: one(query.paymentRequestId),
    }),
  },
  {
    method: 'GET',
    path: '/events/:eventId',
    body: false,
    operation: `query Event($id: ID!) { event(id: $id) { ${EVENT_DETAIL_FIELDS} } }`,
    variables: (params) => ({ id: params.eventId }),
  },
  {
    method: 'POST',
    path: '/events/:eventId/resend',
    body: false,
    operation: `mutation ResendEvent($id: ID!) { resendEvent(id: $id) { ${EVENT_DETAIL_FIELDS} } }`,
    variables: (params) => ({ id: params.eventId }),
  },
];
