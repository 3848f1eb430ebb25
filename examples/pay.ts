// Ask a wallet for money and wait for the user's answer, with the typed client.
//
//   npm run example:pay                  # pays from test_approve: APPROVED about 2 s later
//   npm run example:pay -- alice         # alice approves or rejects it in the wallet app (/app)
//
// Needs a running development gateway (`npm start`) and WALLET_GATEWAY_KEY, a secret key from
// `npx wallet-gateway demo`; WALLET_GATEWAY_URL when the gateway is not on http://127.0.0.1:3000.
// `npm run` runs it on the project's Node 24, which strips the types (no build step); the file is
// an ES module (package.json says "type": "module"), so `await` works at the top level.
import { WalletGateway, WalletGatewayError } from '@wallet-gateway/client';

const secretKey = process.env.WALLET_GATEWAY_KEY;
if (!secretKey) {
  console.error('Set WALLET_GATEWAY_KEY to a secret key: `npx wallet-gateway demo` prints one (secretKey).');
  process.exit(2);
}
const gateway = new WalletGateway({ secretKey, baseUrl: process.env.WALLET_GATEWAY_URL });
const payer = process.argv[2] ?? 'test_approve';

try {
  // A username or a phone number names the wallet to ask.
  const walletId = await gateway.accounts.walletId(payer);
  // The client sends an Idempotency-Key (here your order id): a retried create makes no second request.
  const reference = `order-${Date.now()}`;
  const { paymentRequestId, expiresAt } = await gateway.paymentRequests.create(
    { walletId, amount: 12.5, description: 'Two flat whites', merchantName: 'Corner Café', reference },
    { idempotencyKey: reference },
  );
  console.log(`requested 12.50 from ${payer}: ${paymentRequestId} (expires ${expiresAt})`);
  // APPROVED, REJECTED, CANCELLED or EXPIRED: it always ends, at the latest at expiresAt.
  const outcome = await gateway.waitForOutcome(paymentRequestId!);
  console.log(outcome.status, outcome.transaction?.paymentReference ?? '');
  // Reconcile: find it again by your reference (or by status and dates: { status, createdFrom, createdTo }).
  console.log('found', (await gateway.paymentRequests.list({ reference })).data.length, 'by reference', reference);
} catch (err) {
  if (!(err instanceof WalletGatewayError)) throw err;
  console.error(`the gateway said ${err.statusCode}: ${err.message} (request id ${err.requestId})`);
  process.exit(1);
}
