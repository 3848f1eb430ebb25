import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { useTestApp, factories, http as call, type TestApp } from '../helpers/app.js';
import { isPublicAddress, checkEndpointUrl } from '../../src/webhooks/url-policy.js';
import { postWebhook } from '../../src/webhooks/http-post.js';

let app: TestApp;
useTestApp({ env: { APP_ENV: 'production' } }, (x) => ({ app } = x));

test('production refuses http, credentials and every private, loopback, link-local, metadata or reserved target', async () => {
  const dev = await factories(app).developer();
  expect(dev.secretKey.startsWith('sk_live_')).toBe(true);
  for (const url of [
    'http://example.com/hooks',
    'https://127.0.0.1/hooks',
    'https://127.1.2.3/',
    'https://2130706433/',
    'https://10.1.2.3/',
    'https://172.16.5.4/',
    'https://192.168.1.1/',
    'https://100.64.0.1/',
    'https://169.254.169.254/latest/meta-data/',
    'https://0.0.0.0/',
    'https://[::1]/',
    'https://[::]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:a9fe:a9fe]/',
    'https://[fe80::1]/',
    'https://[fd00:ec2::254]/',
    'https://localhost/',
    'https://api.localhost/',
  ]) {
    const res = await call(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey, body: { url } });
    expect([url, res.status]).toEqual([url, 400]);
    expect(res.body.message).toMatch(/url must/);
  }
  expect((await call(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey })).body.data).toEqual([]);
});

test('a host name is judged by every address it resolves to (registration and delivery)', async () => {
  const policy = { production: true, resolve: async () => [{ address: '93.184.216.34', family: 4 }, { address: '10.0.0.7', family: 4 }] };
  await expect(checkEndpointUrl('https://mixed.example/hook', policy)).rejects.toThrow(/private, loopback/);
  await expect(checkEndpointUrl('https://public.example/hook', { production: true, resolve: async () => [{ address: '93.184.216.34', family: 4 }] })).resolves.toBeInstanceOf(URL);
  await expect(checkEndpointUrl('https://nowhere.example/hook', { production: true, resolve: async () => Promise.reject(new Error('ENOTFOUND')) })).rejects.toThrow(
    /could not be resolved/,
  );
});

test('address classification covers IPv4, IPv6 and IPv4-mapped forms', () => {
  for (const ip of ['127.0.0.1', '10.0.0.1', '172.31.255.255', '192.168.0.1', '169.254.169.254', '100.100.100.200', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe', '64:ff9b::a00:1', '2001:db8::1', 'ff02::1', 'not-an-ip', '::127.0.0.1', '::a9fe:a9fe', '2002:a00:1::1', '2001::1', '[::1]', 'fe80::1%eth0', '198.18.0.1', '203.0.113.9', '2130706433']) {
    expect([ip, isPublicAddress(ip)]).toEqual([ip, false]);
  }
  for (const ip of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:93.184.216.34']) {
    expect([ip, isPublicAddress(ip)]).toEqual([ip, true]);
  }
});

test('at delivery, a name resolving to loopback is refused before connecting, a loopback literal too, and redirects are not followed', async () => {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  try {
    const byName = await postWebhook(new URL(`http://localhost:${port}/`), '{}', {}, { timeoutMs: 2000, publicOnly: true });
    expect(byName).toMatchObject({ error: 'address not allowed' });
    const byLiteral = await postWebhook(new URL(`http://127.0.0.1:${port}/`), '{}', {}, { timeoutMs: 2000, publicOnly: true });
    expect(byLiteral).toMatchObject({ error: 'address not allowed' });
    expect(hits).toBe(0);
    // Development may call loopback; a 3xx is an answer like any other (a failed attempt), never followed.
    const redirected = await postWebhook(new URL(`http://127.0.0.1:${port}/`), '{}', {}, { timeoutMs: 2000, publicOnly: false });
    expect(redirected.status).toBe(302);
    expect(hits).toBe(1);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});
