// A gateway process for a benchmark: its own database on the PostgreSQL at `pgBase`, the build in
// `dir` (this checkout, or another commit's from ./build-at.mjs), started detached (its own
// process group, for ./proc.mjs) on a free port; and the admin calls that seed it.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const ADMIN = 'bench-admin-token-0123456789';
export const USER_SECRET = 'bench-user-token-secret-0123456789';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** psql against `pgBase` (postgres://user@host:port). */
export function psqlOf(pgBase) {
  const u = new URL(pgBase);
  const args = ['-h', u.hostname, '-p', u.port || '5432', '-U', decodeURIComponent(u.username || 'postgres')];
  return (sql, db = 'postgres') => execFileSync('psql', [...args, '-d', db, '-qAtX', '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' });
}

/**
 * Creates database `db` and starts `dir`'s gateway on it with `env` on top of the benchmark's
 * settings (limits out of the way, no sandbox). Resolves once /healthz answers and the workers are up.
 */
export async function startGateway({ root, dir, pgBase, db, env = {} }) {
  const psql = psqlOf(pgBase);
  psql(`create database ${db}`);
  const port = 20000 + Math.floor(Math.random() * 20000);
  // The Node the repository pins (node_modules/.bin/node, Node 24) when this script runs on another.
  const node = existsSync(path.join(root, 'node_modules/.bin/node')) ? path.join(root, 'node_modules/.bin/node') : process.execPath;
  const child = spawn(node, ['dist/src/main.js'], {
    cwd: dir,
    env: {
      ...process.env,
      DATABASE_URL: `${pgBase}/${db}`,
      APP_ENV: 'development',
      LOG_LEVEL: 'warn',
      ADMIN_TOKEN: ADMIN,
      USER_TOKEN_SECRET: USER_SECRET,
      KEY_SIGNING_SECRET: 'bench-key-signing-secret-0123456789',
      RATE_LIMIT_PER_SECOND: '1000000',
      USER_RATE_LIMIT_PER_SECOND: '1000000',
      PAY_PAGE_LIMIT_PER_MINUTE: '1000000',
      MAX_PENDING_PER_PAYER: '1000000000',
      SANDBOX_TEST_WALLETS: 'false',
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bench-gateway-')),
      ...env,
      PORT: String(port),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
    detached: true,
  });
  const base = `http://127.0.0.1:${port}`;
  const stop = () => {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // gone
    }
  };
  process.on('exit', stop);
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {
      // not up yet
    }
    if (i > 300) throw new Error(`the gateway in ${dir} did not start`);
    await sleep(200);
  }
  await sleep(1500); // a cluster's workers come up one after another
  const req = createRequire(path.join(root, 'package.json'));
  const { SignJWT } = await import(req.resolve('jose'));
  const gql = async (query, variables, auth = ADMIN) => {
    const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
    const json = await res.json();
    if (json.errors) throw new Error(`${query.slice(0, 50)}: ${json.errors[0].message}`);
    return Object.values(json.data)[0];
  };
  let phone = 0;
  return {
    base,
    pid: child.pid,
    url: `${pgBase}/${db}`,
    gql,
    stop,
    drop: () => {
      try {
        psql(`drop database ${db} with (force)`);
      } catch {
        // left for inspection
      }
    },
    /** A developer (its id and a secret key). */
    developer: async (name) => {
      const dev = await gql('mutation($n: String!) { createDeveloper(name: $n) { id } }', { n: name });
      const key = await gql('mutation($d: ID!) { issueSecretKey(developerId: $d) { secretKey } }', { d: dev.id });
      return { id: dev.id, secretKey: key.secretKey };
    },
    /** A funded user with `pin` and a user token. */
    user: async (username, pin, balance = 100_000_000) => {
      const u = await gql('mutation($i: CreateUserInput!) { createUser(input: $i) { userId walletId } }', {
        i: { username, phone: `0945${String(phone++).padStart(6, '0')}`, balance, pin },
      });
      const token = await new SignJWT({}).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setSubject(u.userId).setIssuedAt().setExpirationTime('2h').sign(new TextEncoder().encode(USER_SECRET));
      return { ...u, token };
    },
  };
}

/**
 * Writes `count` PENDING requests of `developerId` to `walletId` straight into the table (amount
 * 1.50 ETB, a day to live) through `client` (a pg client on the gateway's database); their ids.
 * The approval benchmarks' supply: each approval takes a request of its own.
 */
export async function insertPendingRequests(client, developerId, walletId, count) {
  const { rows } = await client.query(
    `insert into payment_requests (id, developer_id, wallet_id, amount, currency, description, merchant_name, status, created_at, expires_at, updated_at, code, payment_url)
     select gen_random_uuid(), $1, $2, 1.50, 'ETB', 'Order', 'Bench Shop', 'PENDING', now(), now() + interval '1 day', now(), md5(random()::text || g), null
       from generate_series(1, $3::int) g
     returning id`,
    [developerId, walletId, count],
  );
  return rows.map((r) => r.id);
}
