import { GraphQLError } from 'graphql';

/** Every error code a client can see, with the HTTP status every door answers for it. */
export const ERROR_STATUS = {
  BAD_USER_INPUT: 400,
  WALLET_NOT_ACTIVE: 400,
  UNAUTHENTICATED: 401,
  INSUFFICIENT_FUNDS: 402,
  FORBIDDEN: 403,
  MERCHANT_BLOCKED: 403,
  /** A wrong transaction PIN or a passkey assertion that does not verify (src/consent). */
  VERIFICATION_FAILED: 403,
  NOT_FOUND: 404,
  NOT_ACCEPTABLE: 406,
  PAYMENT_REQUEST_NOT_PENDING: 409,
  PAYMENT_REQUEST_EXPIRED: 409,
  CONFLICT: 409,
  REFUND_EXCEEDS_REMAINING: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  UNPROCESSABLE: 422,
  /** Approvals of the wallet locked after PIN_MAX_ATTEMPTS failed verifications in a row (Retry-After). */
  VERIFICATION_LOCKED: 423,
  RATE_LIMITED: 429,
  TOO_MANY_PENDING_REQUESTS: 429,
  INTERNAL_SERVER_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * The only error type that leaves the domain. It is a GraphQLError so resolvers can throw it
 * as is; `extensions` carries the code and the HTTP status, and `headers` what an HTTP door
 * sends with it (a rate-limited error brings its own Retry-After and RateLimit-*; GraphQL
 * answers carry it as `extensions.retryAfter`, see `errorExtensions`).
 */
export class AppError extends GraphQLError {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, message: string, headers: Readonly<Record<string, string>> = {}) {
    const statusCode = ERROR_STATUS[code];
    super(message, { extensions: { code, statusCode } });
    this.code = code;
    this.statusCode = statusCode;
    this.headers = headers;
  }
}

/**
 * The GraphQL extensions of an answer (SPEC §16): its code and status, and `retryAfter` (whole
 * seconds) when it asks the caller to wait, as the HTTP doors send `Retry-After`.
 */
export function errorExtensions(reply: Pick<ErrorReply, 'code' | 'statusCode' | 'headers'>): { code: string; statusCode: number; retryAfter?: number } {
  const retryAfter = Number(reply.headers['Retry-After']);
  return { code: reply.code, statusCode: reply.statusCode, ...(Number.isInteger(retryAfter) && retryAfter >= 0 ? { retryAfter } : {}) };
}

/** A developer's request to a wallet whose holder blocked it (the only thing it learns about blocks: its own). */
export class MerchantBlockedError extends AppError {
  constructor() {
    super('MERCHANT_BLOCKED', 'The wallet holder does not accept payment requests from this merchant');
  }
}

/**
 * MAX_PENDING_PER_PAYER requests of this developer's are PENDING with this wallet: 429 with
 * `Retry-After`, the seconds until the oldest of them expires (rounded up), as a rate limit's
 * 429 carries its own (every door sends an AppError's headers; GraphQL has `retryAfter` too, `errorExtensions`).
 */
export class TooManyPendingError extends AppError {
  constructor(readonly retryAfterSeconds: number) {
    super('TOO_MANY_PENDING_REQUESTS', 'Too many pending payment requests for this wallet', { 'Retry-After': String(retryAfterSeconds) });
  }
}

export const badInput = (message: string): AppError => new AppError('BAD_USER_INPUT', message);
export const notFound = (message: string): AppError => new AppError('NOT_FOUND', message);

/** Message shown for anything unexpected; the detail goes to the log only. */
export const INTERNAL_MESSAGE = 'Internal server error';
/** Message shown while the database cannot be reached. */
export const UNAVAILABLE_MESSAGE = 'Service temporarily unavailable';

/** Error body of the REST door (and of every non-GraphQL HTTP answer). */
export interface ErrorBody {
  statusCode: number;
  message: string;
}

/** Texts of HTTP errors raised by Koa or the router rather than by our code. */
const HTTP_MESSAGES: Record<number, string> = {
  400: 'Bad request',
  404: 'Not found',
  405: 'Method not allowed',
  413: 'Payload too large',
  415: 'Unsupported media type',
};

/** What a client is told about an error, and how loudly the gateway logs it. */
export interface ErrorReply extends ErrorBody {
  code: string;
  headers: Readonly<Record<string, string>>;
  /** `expected`: the client's doing, no log line; `unavailable`: a warning; `unexpected`: an error with the detail. */
  kind: 'expected' | 'unavailable' | 'unexpected';
  /** The error behind the reply (for the log). */
  cause: unknown;
}

/** An error wrapped by GraphQL execution (a resolver's throw) is judged by what was thrown. */
function unwrap(err: unknown): unknown {
  let e = err;
  while (e instanceof GraphQLError && !(e instanceof AppError) && e.originalError) e = e.originalError;
  return e;
}

/** The HTTP status of a plain message for a status code (Koa's own errors, unmatched routes). */
export function httpMessage(status: number): string {
  return HTTP_MESSAGES[status] ?? (status >= 500 ? INTERNAL_MESSAGE : 'Error');
}

/**
 * The one translation of any error into what a client sees, for every door (REST, GraphQL over
 * HTTP and WebSocket, the CLI): typed errors keep their code, status and headers; GraphQL's own
 * request errors are BAD_USER_INPUT; an unreachable database is 503; anything else is 500
 * `Internal server error` with the detail left to the log.
 */
export function describeError(err: unknown): ErrorReply {
  const e = unwrap(err);
  if (e instanceof AppError) {
    return { statusCode: e.statusCode, message: e.message, code: e.code, headers: e.headers, kind: 'expected', cause: e };
  }
  if (e instanceof GraphQLError) {
    const code = typeof e.extensions?.code === 'string' ? e.extensions.code : 'BAD_USER_INPUT';
    const status = typeof e.extensions?.statusCode === 'number' ? e.extensions.statusCode : 400;
    return { statusCode: status, message: e.message, code, headers: {}, kind: 'expected', cause: e };
  }
  const status = (e as { status?: unknown } | null)?.status;
  if (typeof status === 'number' && status >= 400 && status < 500 && (e as { expose?: unknown }).expose) {
    return { statusCode: status, message: httpMessage(status), code: 'BAD_USER_INPUT', headers: {}, kind: 'expected', cause: e };
  }
  if (isInvalidValue(e)) {
    return { statusCode: 400, message: 'Invalid value in the request', code: 'BAD_USER_INPUT', headers: {}, kind: 'expected', cause: e };
  }
  if (isDatabaseBusy(e)) {
    return { statusCode: 503, message: BUSY_MESSAGE, code: 'SERVICE_UNAVAILABLE', headers: { 'Retry-After': '1' }, kind: 'unavailable', cause: e };
  }
  if (isDatabaseUnavailable(e)) {
    return { statusCode: 503, message: UNAVAILABLE_MESSAGE, code: 'SERVICE_UNAVAILABLE', headers: {}, kind: 'unavailable', cause: e };
  }
  return { statusCode: 500, message: INTERNAL_MESSAGE, code: 'INTERNAL_SERVER_ERROR', headers: {}, kind: 'unexpected', cause: e };
}

/** What a client is told when its statement waited too long for a lock or ran too long. */
export const BUSY_MESSAGE = 'The database is busy (a lock or statement timed out); try again';

/**
 * lock_timeout (55P03 lock_not_available) or statement_timeout (57014 query_canceled) ended the
 * statement, or PostgreSQL chose this transaction to break a deadlock (40P01) or a serialization
 * conflict (40001): the transaction rolled back whole, so trying again is safe.
 */
function isDatabaseBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '55P03' || code === '57014' || code === '40P01' || code === '40001';
}

/**
 * PostgreSQL data exceptions that only a client's value can cause in our fixed statements: a NUL
 * character (22021), text that is no valid number/uuid/date (22P02, 22007, 22008) or a number out
 * of range (22003). A safety net behind each door's own validation: the call changes nothing.
 */
function isInvalidValue(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && ['22021', '22P02', '22007', '22008', '22003'].includes(code);
}

/** True when an error (or its cause) means the database cannot be reached right now. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const seen = new Set<unknown>();
  let e: unknown = err;
  while (e && typeof e === 'object' && !seen.has(e)) {
    seen.add(e);
    const code = (e as { code?: unknown }).code;
    if (
      typeof code === 'string' &&
      ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P03', '08006', '08001', '08003'].includes(code)
    ) {
      return true;
    }
    const message = (e as { message?: unknown }).message;
    if (
      typeof message === 'string' &&
      /Connection terminated|connect ECONNREFUSED|Knex: Timeout acquiring a connection|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable|Transaction query already complete/i.test(
        message,
      )
    ) {
      return true;
    }
    // graphql wraps non-Error rejections (the driver rejects some connects with plain objects) as NonErrorThrown.
    const wrapped = e as { originalError?: unknown; cause?: unknown; thrownValue?: unknown };
    e = wrapped.originalError ?? wrapped.cause ?? wrapped.thrownValue;
  }
  return false;
}
