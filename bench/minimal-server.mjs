// The bench's baseline (a): the least a Node server can do for the gateway's two hot routes —
// node:http and a `pg` pool of the same size as the gateway's, no framework, no auth, no
// validation. GET /api/v1/wallet/payment-request/:id runs the status SELECT; POST
// /api/v1/wallet/request-payment runs the minimal durable create (begin; insert the payment
// request; insert its outbox event; commit). BENCH_WORKERS processes (node:cluster), like the gateway.
import cluster from 'node:cluster';
import http from 'node:http';
import { randomUUID, randomBytes } from 'node:crypto';
import pg from 'pg';

const workers = Number(process.env.BENCH_WORKERS ?? 1);
if (cluster.isPrimary && workers > 1) {
  for (let i = 0; i < workers; i++) cluster.fork();
  process.on('SIGTERM', () => {
    for (const w of Object.values(cluster.workers)) w.process.kill('SIGTERM');
    process.exit(0);
  });
} else {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DB_POOL_MAX ?? 10) });
  const STATUS = `select id, status, amount, currency, description, merchant_name, created_at, expires_at, updated_at,
                         transaction_id, reference, metadata
                    from payment_requests where id = $1 and developer_id = $2`;
  const DEVELOPER = process.env.BENCH_DEVELOPER_ID;
  const WALLET = process.env.BENCH_WALLET_ID;
  const reply = (res, status, body) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const create = async (input) => {
    const client = await pool.connect();
    try {
      await client.query('begin');
      const id = randomUUID();
      const { rows } = await client.query(
        `insert into payment_requests (id, developer_id, wallet_id, amount, currency, description, merchant_name, status, created_at, expires_at, updated_at)
         values ($1, $2, $3, $4::numeric, 'IRR', $5, $6, 'PENDING', now(), now() + interval '5 minutes', now())
         returning id, status, expires_at`,
        [id, DEVELOPER, WALLET, input.amount, input.description, input.merchantName],
      );
      await client.query(
        `insert into events (id, type, developer_id, subject_id, payment_request_id, sequence, payload, created_at)
         values ($1, 'payment_request.created', $2, $3::text, $3, 1, $4::jsonb, now())`,
        [`evt_${randomBytes(12).toString('hex')}`, DEVELOPER, id, JSON.stringify({ id, amount: input.amount })],
      );
      await client.query('commit');
      return { success: true, message: 'created', paymentRequestId: rows[0].id, status: rows[0].status, expiresAt: rows[0].expires_at };
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  };
  const server = http.createServer((req, res) => {
    const fail = (err) => reply(res, 500, { statusCode: 500, message: String(err.message) });
    if (req.method === 'GET' && req.url.startsWith('/api/v1/wallet/payment-request/')) {
      pool.query(STATUS, [req.url.slice('/api/v1/wallet/payment-request/'.length), DEVELOPER]).then(
        ({ rows }) => (rows[0] ? reply(res, 200, rows[0]) : reply(res, 404, { statusCode: 404, message: 'Payment request not found' })),
        fail,
      );
      return;
    }
    if (req.method === 'POST' && req.url === '/api/v1/wallet/request-payment') {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => create(JSON.parse(Buffer.concat(chunks).toString('utf8'))).then((body) => reply(res, 200, body), fail));
      return;
    }
    reply(res, 404, { statusCode: 404, message: 'Not found' });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(Number(process.env.PORT), '127.0.0.1');
  process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
}
