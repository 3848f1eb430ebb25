// A café's till: a payment link for the bill, its QR code on the till's screen, and the outcome.
//
//   npm run example:till                 # then pay it: open the printed link, sign in (e.g. alice), PIN
//
// It makes an open request (no wallet named: whoever scans the code pays it), saves its QR code
// as SVG and PNG in a new temporary directory (the till's screen would show it), prints the link
// the code carries, and waits until someone pays it (or it expires, in 15 minutes). In
// development the link opens the wallet-app page (/app) on that request; the payer signs in as
// any user of `npx wallet-gateway demo`, types their PIN, and the till prints APPROVED.
// Needs a running development gateway (`npm start`) and WALLET_GATEWAY_KEY, a secret key from
// `npx wallet-gateway demo`; WALLET_GATEWAY_URL when the gateway is not on http://127.0.0.1:3000.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { WalletGateway, WalletGatewayError } from '@wallet-gateway/client';

const secretKey = process.env.WALLET_GATEWAY_KEY;
if (!secretKey) {
  console.error('Set WALLET_GATEWAY_KEY to a secret key: `npx wallet-gateway demo` prints one (secretKey).');
  process.exit(2);
}
const gateway = new WalletGateway({ secretKey, baseUrl: process.env.WALLET_GATEWAY_URL });

try {
  // The bill's number is the reference and the Idempotency-Key: a retried create makes no second link.
  const bill = `bill-${Date.now()}`;
  const link = await gateway.paymentRequests.createPaymentLink(
    { amount: 12.5, description: 'Table 4: two flat whites', merchantName: 'Corner Café', expiresInSeconds: 900, reference: bill },
    { idempotencyKey: bill },
  );
  const id = link.paymentRequestId!;
  // The QR code for the till's screen: SVG text, or PNG bytes for a receipt printer.
  const dir = await mkdtemp(path.join(tmpdir(), 'till-'));
  await writeFile(path.join(dir, 'bill.svg'), await gateway.paymentRequests.qrCode(id));
  await writeFile(path.join(dir, 'bill.png'), await gateway.paymentRequests.qrCode(id, { format: 'png' }));
  console.log(`${bill}: 12.50 at ${link.paymentUrl} (QR code in ${dir}/bill.svg and bill.png; expires ${link.expiresAt})`);
  console.log('waiting for a payer: open the link, sign in (e.g. alice of `npx wallet-gateway demo`) and pay with the PIN');
  // APPROVED once someone pays it; EXPIRED if no one does in time (or CANCELLED if the till cancels it).
  const outcome = await gateway.waitForOutcome(id);
  console.log(outcome.status, outcome.transaction?.paymentReference ?? '');
} catch (err) {
  if (!(err instanceof WalletGatewayError)) throw err;
  console.error(`the gateway said ${err.statusCode}: ${err.message} (request id ${err.requestId})`);
  process.exit(1);
}
