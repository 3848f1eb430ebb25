// `npm start` with two workers (node:cluster): /metrics reports the cluster, whichever worker a
// scrape reaches (the primary sums the workers' own metrics; the database-derived gauges are read
// once), and every worker traces (OpenTelemetry starts in each worker before the app loads).
import http from 'node:http';
import { createTestDatabase, describeOnServer, type TestDatabase } from '../helpers/db.js';
import { seed, spawnGateway, type GatewayProcess } from '../process/gateway-process.js';
import { parseExposition, valueOf } from '../helpers/prometheus.js';
import { startOtlpReceiver } from '../helpers/otlp-receiver.js';
import { until } from '../helpers/expect.js';

describeOnServer('/metrics and traces of two workers', 'spawns the cluster on DATABASE_URL; the embedded database belongs to one process', () => {
  let database: TestDatabase;
  let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let gateway: GatewayProcess;

  beforeAll(async () => {
    database = await createTestDatabase();
    otlp = await startOtlpReceiver();
    gateway = await spawnGateway(database.url!, {
      WEB_CONCURRENCY: '2',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    await until(() => gateway.lines.filter((l) => l.includes('"wallet gateway listening"')).length >= 2, 60_000, 'both workers to listen');
  }, 120_000);

  afterAll(async () => {
    if (gateway && gateway.child.exitCode === null) {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    }
    await otlp?.close();
    await database?.close();
  });

  /** One request on a new connection (the primary hands connections to the workers in turn). */
  function request(path: string, opts: { token?: string; body?: unknown } = {}): Promise<{ status: number; worker: string; text: string }> {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        new URL(path, gateway.baseUrl),
        {
          method: payload ? 'POST' : 'GET',
          agent: false,
          headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode!, worker: String(res.headers['x-worker']), text }));
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  test('every scrape, whichever worker answers it, counts the requests both workers served', async () => {
    const { developers, users } = await seed(database.db, { developers: 1, users: 1, balance: 100 });
    const workers = new Set<string>();
    let creates = 0;
    while (workers.size < 2 || creates < 4) {
      const res = await request('/api/v1/wallet/request-payment', {
        token: developers[0]!.secretKey,
        body: { walletId: users[0]!.walletId, amount: 1, description: 'Clustered', merchantName: 'Shop' },
      });
      expect(res.status).toBe(200);
      workers.add(res.worker);
      creates++;
      if (creates > 40) throw new Error('the requests all went to one worker');
    }
    const scrapedBy = new Set<string>();
    for (let i = 0; i < 40 && scrapedBy.size < 2; i++) {
      const res = await request('/metrics');
      expect(res.status).toBe(200);
      scrapedBy.add(res.worker);
      const samples = parseExposition(res.text);
      expect(valueOf(samples, 'payment_requests_total', { outcome: 'created' })).toBe(creates);
      expect(valueOf(samples, 'http_request_duration_seconds_count', { route: 'POST /api/v1/wallet/request-payment', status: '200' })).toBe(creates);
      // Each series once: the sum of the workers, then the database's figures.
      for (const name of ['ledger_check_mismatches', 'webhook_deliveries_pending', 'nodejs_version_info', 'outbox_reader_lag_seconds', 'graphql_open_subscriptions']) {
        expect({ name, series: samples.filter((s) => s.name === name).length }).toEqual({ name, series: 1 });
      }
      // The primary's own part: its outbox reader (idle or keeping up) has no lag to speak of.
      expect(valueOf(samples, 'outbox_reader_lag_seconds')).toBeLessThan(5);
    }
    expect(scrapedBy.size).toBe(2);
  });

  test('both workers trace: spans arrive from two processes', async () => {
    await until(() => new Set(otlp.spans.filter((s) => s.name === 'POST /api/v1/wallet/request-payment').map((s) => s.resource['process.pid'])).size >= 2, 15_000, 'spans of both workers');
    expect(gateway.lines.filter((l) => l.includes('"tracing on"')).length).toBeGreaterThanOrEqual(2);
  });
});
