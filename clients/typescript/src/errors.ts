/**
 * An error answer of the gateway: every one carries the HTTP status, the gateway's message and
 * the `X-Request-Id` of the call (quote it to support). Branch on `statusCode`; the message is
 * for people.
 */
export class WalletGatewayError extends Error {
  override name = 'WalletGatewayError';
  /** The HTTP status (400, 401, 404, 409, 422, 429, 500, 503, ...). */
  readonly statusCode: number;
  /** The gateway's `X-Request-Id` for this call, or null when the answer had none. */
  readonly requestId: string | null;
  /** Seconds the gateway asked to wait before trying again (`Retry-After`), when it said. */
  readonly retryAfter: number | null;

  constructor(opts: { statusCode: number; message: string; requestId: string | null; retryAfter?: number | null }) {
    super(opts.message);
    this.statusCode = opts.statusCode;
    this.requestId = opts.requestId;
    this.retryAfter = opts.retryAfter ?? null;
  }
}

/** The gateway could not be reached at all (connection refused, DNS, TLS): no answer, so no status. */
export class WalletGatewayConnectionError extends Error {
  override name = 'WalletGatewayConnectionError';

  constructor(
    readonly url: string,
    cause: unknown,
  ) {
    const inner = cause instanceof Error ? (cause.cause as { code?: string; message?: string } | undefined) : undefined;
    const reason = inner?.code ?? inner?.message ?? (cause instanceof Error ? cause.message : String(cause));
    super(`Could not reach the wallet gateway at ${url}: ${reason}`, { cause });
  }
}

/** `waitForOutcome` gave up before the payment request reached a final state. */
export class WalletGatewayTimeoutError extends Error {
  override name = 'WalletGatewayTimeoutError';
}
