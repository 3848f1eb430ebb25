// The typed client's payment links and held payments (#25): createPaymentLink, qrCode (SVG text,
// PNG bytes), transactions.capture and transactions.void, against a real gateway.
import { WalletGateway, WalletGatewayError } from '@wallet-gateway/client';
import { useTestApp, type factories, type TestApp } from '../helpers/app.js';
import { approve } from '../helpers/payments.js';

let app: TestApp;
let f: ReturnType<typeof factories>;
useTestApp({}, (x) => ({ app, f } = x));

async function merchant() {
  const dev = await f.developer();
  return new WalletGateway({ secretKey: dev.secretKey, baseUrl: app.baseUrl });
}

test('createPaymentLink answers the creation body with its paymentUrl; qrCode draws it as SVG text or PNG bytes', async () => {
  const gateway = await merchant();
  const link = await gateway.paymentRequests.createPaymentLink({ amount: 12.5, description: 'Table 4', merchantName: 'Café', expiresInSeconds: 600 });
  expect(link).toMatchObject({ success: true, status: 'PENDING', paymentUrl: expect.stringMatching(/\/pay\/[A-Za-z0-9_-]{24}$/) });
  const svg = await gateway.paymentRequests.qrCode(link.paymentRequestId!);
  expect(svg).toMatch(/^<svg/);
  const png = await gateway.paymentRequests.qrCode(link.paymentRequestId!, { format: 'png' });
  expect(png).toBeInstanceOf(Uint8Array);
  expect([...png.slice(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
  await expect(gateway.paymentRequests.createPaymentLink({ amount: 1, description: 'x', merchantName: 'y', expiresInSeconds: 10 })).rejects.toMatchObject({
    statusCode: 400,
    message: expect.stringContaining('expiresInSeconds'),
  });
});

test('transactions.capture (part) and transactions.void; a second capture is a WalletGatewayError 409', async () => {
  const gateway = await merchant();
  const user = await f.user({ balance: 100 });
  const ids: string[] = [];
  for (let i = 0; i < 2; i++) {
    const created = await gateway.paymentRequests.create({ walletId: user.walletId, amount: 20, description: 'Order', merchantName: 'Shop', capture: 'MANUAL' });
    ids.push((await approve(app.baseUrl, user.token, created.paymentRequestId!)).body.data.approvePaymentRequest.transactionId);
  }
  expect(await gateway.transactions.get(ids[0]!)).toMatchObject({ status: 'PENDING', capturedAmount: null });
  expect(await gateway.transactions.capture(ids[0]!, { amount: 15 })).toMatchObject({ status: 'COMPLETED', amount: 20, capturedAmount: 15 });
  expect(await gateway.transactions.void(ids[1]!)).toMatchObject({ status: 'CANCELLED', capturedAmount: null });
  const again = await gateway.transactions.capture(ids[0]!).catch((err: unknown) => err);
  expect(again).toBeInstanceOf(WalletGatewayError);
  expect(again).toMatchObject({ statusCode: 409 });
});
