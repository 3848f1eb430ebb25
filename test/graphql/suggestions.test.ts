import WebSocket from 'ws';
import { useTestApp, factories, gql, type TestApp } from '../helpers/app.js';

// #10: with introspection off (production), validation errors do not suggest schema names.
let app: TestApp;
useTestApp({ env: { APP_ENV: 'production' } }, (x) => ({ app } = x));

test('HTTP: a misspelt field is refused without "Did you mean"', async () => {
  const user = await factories(app).user();
  const res = await gql(app.baseUrl, '{ myPendingPaymentRequest { id } }', {}, user.token);
  expect(res.body.errors[0].message).toBe('Cannot query field "myPendingPaymentRequest" on type "Query".');
});

test('WebSocket: the same', async () => {
  const user = await factories(app).user();
  const socket = new WebSocket(`${app.baseUrl.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  const frames: any[] = [];
  const got = new Promise<any>((resolve) =>
    socket.on('message', (d) => {
      const m = JSON.parse(String(d));
      frames.push(m);
      if (m.type === 'connection_ack') socket.send(JSON.stringify({ type: 'subscribe', id: '1', payload: { query: 'subscription { paymentRequestedd { id } }' } }));
      if (m.id === '1') resolve(m);
    }),
  );
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${user.token}` } })));
  const error = await got;
  expect(error.type).toBe('error');
  expect(error.payload[0].message).toBe('Cannot query field "paymentRequestedd" on type "Subscription".');
  socket.close();
});
