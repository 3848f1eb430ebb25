/**
 * @wallet-gateway/client: the typed TypeScript client of the Wallet Direct-Charge Gateway.
 *
 * ```ts
 * import { WalletGateway } from '@wallet-gateway/client';
 * const gateway = new WalletGateway({ secretKey: process.env.WALLET_GATEWAY_KEY!, baseUrl: 'http://127.0.0.1:3000' });
 * const { paymentRequestId } = await gateway.paymentRequests.create({ walletId, amount: 12.5, description: 'Order 1001', merchantName: 'Shop' });
 * const outcome = await gateway.waitForOutcome(paymentRequestId!);
 * ```
 */
export {
  WalletGateway,
  type BalanceTransactionFilter,
  type EventFilter,
  type PaymentRequestFilter,
  type PayoutFilter,
  type PostOptions,
  type WalletGatewayOptions,
} from './client.js';
export { WalletGatewayConnectionError, WalletGatewayError, WalletGatewayTimeoutError } from './errors.js';
export type { PaymentOutcome, WaitOptions } from './outcome.js';
export type { RetryInfo } from './retry.js';
export { consentReceiptVerifier, ConsentReceiptError, type ConsentReceiptClaims, type ConsentVerifierOptions } from './consent.js';
export { EVENT_TYPES, isEventType } from './event-types.js';
export { verify as verifyWebhook, webhooks, WebhookVerificationError, type HeadersLike } from './webhooks.js';
export type * from './types.js';
export type { components, paths, webhooks as WebhookOperations } from './generated/openapi.js';
