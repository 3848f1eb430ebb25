// A webhook receiver that verifies every delivery's Standard Webhooks signature.
//
//   npm run example:webhooks
//
// It listens on a port of its own (RECEIVER_PORT, else one the system picks), registers that
// address as a webhook endpoint of your account, prints each verified event, and deletes the
// endpoint when it stops (Ctrl-C), so no endpoint is left behind for the gateway to retry.
// (`npx wallet-gateway listen --forward-to` is the other way to get webhooks on a laptop: it
// signs with a secret of its own and needs no endpoint; don't point it at this receiver.)
// Needs a running development gateway (`npm start`) and WALLET_GATEWAY_KEY (`npx wallet-gateway
// demo` prints one); WALLET_GATEWAY_URL when the gateway is not on http://127.0.0.1:3000.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WalletGateway, webhooks } from '@wallet-gateway/client';

const secretKey = process.env.WALLET_GATEWAY_KEY;
if (!secretKey) {
  console.error('Set WALLET_GATEWAY_KEY to a secret key: `npx wallet-gateway demo` prints one (secretKey).');
  process.exit(2);
}
const gateway = new WalletGateway({ secretKey, baseUrl: process.env.WALLET_GATEWAY_URL });

let secret = '';
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    try {
      // The raw body exactly as it arrived: a re-serialised JSON body would not verify.
      const event = webhooks.verify(Buffer.concat(chunks), req.headers, secret);
      if (event.type === 'payment_request.approved') {
        console.log(`verified ${event.type} ${event.data.paymentRequest.id} paid, ${event.data.transaction.paymentReference}`);
      } else {
        console.log(`verified ${event.type} ${event.id}`);
      }
      res.writeHead(204).end(); // acknowledge quickly; handle event.id at most once
    } catch {
      console.log('refused a delivery whose signature does not verify');
      res.writeHead(400).end();
    }
  });
});
await new Promise<void>((resolve) => server.listen(Number(process.env.RECEIVER_PORT ?? 0), '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;

const endpoint = await gateway.webhookEndpoints.create({ url });
secret = endpoint.secret; // shown once, at creation
console.log(`endpoint ${endpoint.id} receives at ${url}; Ctrl-C to stop and delete it`);

async function stop(): Promise<void> {
  await gateway.webhookEndpoints.delete(endpoint.id);
  console.log(`endpoint ${endpoint.id} deleted`);
  server.close();
  process.exit(0);
}
process.once('SIGINT', () => void stop());
process.once('SIGTERM', () => void stop());
