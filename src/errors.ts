import { GraphQLError } from 'graphql';

/** Every error code a client can see, with the HTTP status the REST door answers for it. */
export const ERROR_STATUS = {
  BAD_USER_INPUT: 400,
  WALLET_NOT_ACTIVE: 400,
  UNAUTHENTICATED: 401,
  INSUFFICIENT_FUNDS: 402,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  PAYMENT_REQUEST_NOT_PENDING: 409,
  PAYMENT_REQUEST_EXPIRED: 409,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  UNPROCESSABLE: 422,
  RATE_LIMITED: 429,
  INTERNAL_SERVER_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * The only error type that leaves the domain. It is a GraphQLError so resolvers can throw it
 * as is; `extensions` carries the code and the HTTP status, which every door reuses.
 */
export class AppError extends GraphQLError {
  readonly code: ErrorCode;
  readonly statusCode: number;

  constructor(code: ErrorCode, message: string) {
    const statusCode = ERROR_STATUS[code];
    super(message, { extensions: { code, statusCode } });
    this.code = code;
    this.statusCode = statusCode;
  }
}

export const badInput = (message: string): AppError => new AppError('BAD_USER_INPUT', message);
export const notFound = (message: string): AppError => new AppError('NOT_FOUND', message);

/** Message shown for anything unexpected; the detail goes to the log only. */
export const INTERNAL_MESSAGE = 'Internal server error';

/** Error body of the REST door. */
export interface ErrorBody {
  statusCode: number;
  message: string;
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
      /Connection terminated|connect ECONNREFUSED|Knex: Timeout acquiring a connection|timeout exceeded when trying to connect/i.test(
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
