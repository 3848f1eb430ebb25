/** Per-request state the Koa middleware share. */
export interface GatewayState {
  requestId: string;
  /** Route template for logs and metrics (never the raw path with ids). */
  route?: string;
}
