// An online shop: hold the money at checkout, capture it at delivery (or void it), with the typed client.
//
//   npm run example:capture              # test_approve approves both orders about 2 s after each is made
//   npm run example:capture -- alice     # alice approves both in the wallet app (/app) with her PIN
//
// Two orders of 30.00 ask for `capture: "MANUAL"`: the payer's approval only holds the money on
// their wallet (the transaction is PENDING, nothing reaches you yet). The first is delivered
// with one item out of stock: 25.00 is captured and the other 5.00 released at once. The second
// is cancelled before delivery: it is voided, and no money ever moved. A capture happens once:
// the example then shows the 409 a void of the captured one answers.
// Needs a running development gateway (`npm start`) and WALLET_GATEWAY_KEY, a secret key from
// `npx wallet-gateway demo`; WALLET_GATEWAY_URL when the gateway is not on http://127.0.0.1:3000.
import { WalletGateway, WalletGatewayError, type Transaction } from '@wallet-gateway/client';

const secretKey = process.env.WALLET_GATEWAY_KEY;
if (!secretKey) {
  console.error('Set WALLET_GATEWAY_KEY to a secret key: `npx wallet-gateway demo` prints one (secretKey).');
  process.exit(2);
}
const gateway = new WalletGateway({ secretKey, baseUrl: process.env.WALLET_GATEWAY_URL });
const payer = process.argv[2] ?? 'test_approve';

const shown = (t: Transaction): string => `${t.status} amount ${t.amount.toFixed(2)} captured ${t.capturedAmount === null || t.capturedAmount === undefined ? 'null' : t.capturedAmount.toFixed(2)}`;

/** Checkout: a MANUAL request for 30.00, and the held transaction once the payer approves it. */
async function checkout(walletId: string, order: string): Promise<Transaction | undefined> {
  const { paymentRequestId } = await gateway.paymentRequests.create(
    { walletId, amount: 30, description: `Order ${order}`, merchantName: 'Demo Shop', reference: order, capture: 'MANUAL', expiresInSeconds: 3600 },
    { idempotencyKey: order },
  );
  console.log(`${order}: asked ${payer} for 30.00, capture MANUAL (${paymentRequestId})`);
  const outcome = await gateway.waitForOutcome(paymentRequestId!);
  if (outcome.status !== 'APPROVED' || !outcome.transaction) {
    console.log(`${order}: ${outcome.status}, nothing held`);
    return undefined;
  }
  console.log(`${order}: approved, held: ${shown(outcome.transaction)}`);
  return outcome.transaction;
}

try {
  const walletId = await gateway.accounts.walletId(payer);
  const stamp = Date.now();
  const [delivered, cancelled] = await Promise.all([checkout(walletId, `order-${stamp}-1`), checkout(walletId, `order-${stamp}-2`)]);
  if (delivered) {
    // Delivery, one 5.00 item out of stock: capture 25.00 (no amount: all of it); the rest is released now.
    console.log(`delivered, captured: ${shown(await gateway.transactions.capture(delivered.id, { amount: 25 }))}`);
    try {
      await gateway.transactions.void(delivered.id);
    } catch (err) {
      if (!(err instanceof WalletGatewayError)) throw err;
      console.log(`a void after the capture: ${err.statusCode} ${err.message}`);
    }
  }
  if (cancelled) {
    // The order was cancelled before delivery: void it, the whole hold is released.
    console.log(`cancelled, voided: ${shown(await gateway.transactions.void(cancelled.id))}`);
  }
} catch (err) {
  if (!(err instanceof WalletGatewayError)) throw err;
  console.error(`the gateway said ${err.statusCode}: ${err.message} (request id ${err.requestId})`);
  process.exit(1);
}
