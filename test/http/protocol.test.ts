import net from 'node:net';
import { useTestApp, http, type TestApp } from '../helpers/app.js';

// #10: what Node's parser or Koa's routers would answer with a 5xx or an empty body gets a 4xx
// with the Error body.
let app: TestApp;
useTestApp({}, (x) => ({ app } = x));

/** Sends raw bytes and returns the whole response (the server closes the connection). */
function raw(bytes: string): Promise<{ status: number; headers: string; body: string }> {
  const url = new URL(app.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => socket.write(bytes));
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('utf8')));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), headers: head, body });
    });
  });
}

test.each(['TRACE', 'PROPFIND', 'PURGE', 'LOCK', 'MKCOL', 'SEARCH', 'QUERY'])('%s on a known path: 405 with Allow and the Error body', async (method) => {
  const res = await raw(`${method} /api/v1/wallet/request-payment HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  expect(res.status).toBe(405);
  expect(res.headers).toMatch(/\r\nAllow: POST/i);
  expect(JSON.parse(res.body)).toEqual({ statusCode: 405, message: 'Method not allowed' });
});

test('an unknown method on an unknown path: 404', async () => {
  const res = await raw(`PROPFIND /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  expect(res.status).toBe(404);
  expect(JSON.parse(res.body)).toEqual({ statusCode: 404, message: 'Not found' });
});

test('a method Node does not know at all: 400 with the Error body', async () => {
  const res = await raw(`FROBNICATE /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
  expect(res.status).toBe(400);
  expect(JSON.parse(res.body)).toEqual({ statusCode: 400, message: 'Bad request: unknown method' });
});

test('CONNECT: 405 with the Error body', async () => {
  const res = await raw(`CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`);
  expect(res.status).toBe(405);
  expect(JSON.parse(res.body)).toEqual({ statusCode: 405, message: 'Method not allowed' });
});

test('a header over 16 KB: 431 with the Error body', async () => {
  const res = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
  expect(res.status).toBe(431);
  expect(JSON.parse(res.body)).toEqual({ statusCode: 431, message: 'Request headers too large' });
});

test('a malformed request line or header: 400 with the Error body', async () => {
  for (const bytes of ['GET /healthz HTTP/9.9\r\n\r\n', 'GET /healthz HTTP/1.1\r\nBad Header\r\n\r\n', '\x00\x01\x02\r\n\r\n']) {
    const res = await raw(bytes);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toEqual({ statusCode: 400, message: expect.stringMatching(/^Bad request/) });
  }
});

test('the server still serves normally afterwards', async () => {
  expect((await http(app.baseUrl, '/healthz')).status).toBe(200);
});
