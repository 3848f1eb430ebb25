import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { execute, parse, printSchema, type GraphQLSchema } from 'graphql';
import { loadConfig, type Config } from '../config.js';
import { resolveStartupKeys } from '../startup-keys.js';
import { createLogger } from '../logger.js';
import { openDatabase, type Database } from '../db/database.js';
import { getSchema } from '../schema.js';
import { createServices, type Services } from '../services.js';
import { createContext, type ContextDeps } from '../context.js';
import { createResolvers } from '../resolvers.js';
import { AppError, describeError } from '../errors.js';
import { mintUserToken } from '../auth/user-tokens.js';
import { listTestWallets } from '../sandbox/sandbox.js';
import { WalletGatewayError } from '@wallet-gateway/client';
import { CLI_OPERATOR } from '../operators/operator.service.js';
import { isMerchantCommand, MERCHANT_USAGE, MerchantCommandError, runMerchantCommand } from './merchant.js';

/** A mistake in how the command was called: message to stderr, exit 2, nothing written. */
class UsageError extends Error {}

const USAGE = `Usage: wallet-gateway <command> [--flags]

Commands (each prints one JSON object on stdout):
  developer:create --name N                      -> {developerId}
  key:issue --developer ID                       -> {keyId, secretKey}   (shown once)
  key:revoke --key ID                            -> {keyId, revokedAt}
  user:create --username U --phone P [--balance B] [--currency C] [--pin NNNNNN]
                                                 -> {userId, walletId, pin}   (pin shown once; random when omitted)
  pin:reset --wallet W [--pin NNNNNN]            -> {walletId, pin}   (lifts any lock)
  pin:unlock --wallet W                          -> {walletId, unlocked}
  wallet:status --wallet W --status ACTIVE|SUSPENDED|CLOSED
                                                 -> {walletId, status}
  wallet:topup --wallet W --amount A             -> {walletId, balance, currency}
  user:token --username U                        -> {token}
  operator:create --name N                       -> {operatorId, token}   (shown once)
  operator:revoke --operator ID                  -> {operatorId, revokedAt}
  fees:set --developer ID --percent P --fixed F  -> {percent, fixed, isDefault, updatedAt}   (P 0-10, 2 decimals)
  payouts:run                                    -> {payouts}   (the payouts due now, now as the cut-off)
  payout:paid --payout ID --bank-reference R     -> {id, status, paidAt, bankReference}
  payout:failed --payout ID --reason R           -> {id, status, failureReason}   (its amount back to available)
  balance:adjust --developer ID --currency C --amount A --reason R
                                                 -> the adjustment's balance transaction (a debit: --amount=-5.00)
  demo                                           -> a developer, a key and two funded users (each with a fresh pin)
  test-wallets                                   -> {delayMs, testWallets: [...]}  (development only)
  migrate                                        -> {migrated: [...]}
  schema:emit [--out schema/schema.graphql]      -> {file}

The database is DATABASE_URL, else the embedded one under DATA_DIR (./.data), shared with a
running \`npm start\`.

${MERCHANT_USAGE}`;

interface Runtime {
  config: Config;
  db: Database;
  schema: GraphQLSchema;
  services: Services;
  /** What an operation's context is built from (the services' resolvers). */
  contexts: ContextDeps;
  /** One request id for every operation of this CLI run (the audit log groups them). */
  runId: string;
}

/** Where a run reads its settings and writes its output: the process's own in `main.ts`. */
export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout(text: string): void;
  stderr(text: string): void;
  /** Ends a long-running command (`listen`): SIGINT/SIGTERM in the executable. */
  signal?: AbortSignal;
}

/** Runs an admin GraphQL operation against the one schema; GraphQL errors become AppErrors. */
async function admin<T>(rt: Runtime, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const contextValue = await createContext(rt.contexts, { principal: { kind: 'admin', operator: CLI_OPERATOR }, requestId: rt.runId, logger: createLogger('silent') });
  const result = await execute({ schema: rt.schema, document: parse(query), variableValues: variables, contextValue });
  const first = result.errors?.[0];
  if (first) {
    const reply = describeError(first);
    if (reply.kind !== 'expected') throw reply.cause;
    throw new UsageError(reply.message);
  }
  const data = result.data as Record<string, T>;
  return Object.values(data)[0] as T;
}

function need(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v.trim() === '') throw new UsageError(`--${name} is required`);
  return v.trim();
}

function amountFlag(value: string, name: string): number {
  if (!/^\d+(\.\d{1,2})?$/.test(value)) throw new UsageError(`--${name} must be a positive amount with at most 2 decimals`);
  return Number(value);
}

const COMMANDS: Record<string, { flags: Record<string, { type: 'string' }>; run(rt: Runtime, v: Record<string, string | undefined>): Promise<unknown> }> = {
  'developer:create': {
    flags: { name: { type: 'string' } },
    async run(rt, v) {
      const d = await admin<{ id: string }>(rt, 'mutation($n: String!) { createDeveloper(name: $n) { id } }', { n: need(v, 'name') });
      return { developerId: d.id };
    },
  },
  'key:issue': {
    flags: { developer: { type: 'string' } },
    run: (rt, v) =>
      admin(rt, 'mutation($d: ID!) { issueSecretKey(developerId: $d) { keyId secretKey } }', { d: need(v, 'developer') }),
  },
  'key:revoke': {
    flags: { key: { type: 'string' } },
    run: (rt, v) => admin(rt, 'mutation($k: ID!) { revokeSecretKey(keyId: $k) { keyId revokedAt } }', { k: need(v, 'key') }),
  },
  'user:create': {
    flags: { username: { type: 'string' }, phone: { type: 'string' }, balance: { type: 'string' }, currency: { type: 'string' }, pin: { type: 'string' } },
    run: (rt, v) =>
      admin(rt, 'mutation($i: CreateUserInput!) { createUser(input: $i) { userId walletId pin } }', {
        i: {
          username: need(v, 'username'),
          phone: need(v, 'phone'),
          ...(v.balance !== undefined ? { balance: amountFlag(v.balance, 'balance') } : {}),
          ...(v.currency !== undefined ? { currency: v.currency } : {}),
          ...(v.pin !== undefined ? { pin: v.pin } : {}),
        },
      }),
  },
  'pin:reset': {
    flags: { wallet: { type: 'string' }, pin: { type: 'string' } },
    run: (rt, v) =>
      admin(rt, 'mutation($w: String!, $p: String) { resetTransactionPin(walletId: $w, pin: $p) { walletId pin } }', {
        w: need(v, 'wallet'),
        p: v.pin ?? null,
      }),
  },
  'pin:unlock': {
    flags: { wallet: { type: 'string' } },
    async run(rt, v) {
      const walletId = need(v, 'wallet');
      const unlocked = await admin<boolean>(rt, 'mutation($w: String!) { unlockTransactionPin(walletId: $w) }', { w: walletId });
      return { walletId, unlocked };
    },
  },
  'wallet:status': {
    flags: { wallet: { type: 'string' }, status: { type: 'string' } },
    async run(rt, v) {
      const status = need(v, 'status').toUpperCase();
      if (!['ACTIVE', 'SUSPENDED', 'CLOSED'].includes(status)) throw new UsageError('--status must be ACTIVE, SUSPENDED or CLOSED');
      return admin(rt, 'mutation($w: String!, $s: WalletStatus!) { setWalletStatus(walletId: $w, status: $s) { walletId status } }', {
        w: need(v, 'wallet'),
        s: status,
      });
    },
  },
  'wallet:topup': {
    flags: { wallet: { type: 'string' }, amount: { type: 'string' } },
    run: (rt, v) =>
      admin(rt, 'mutation($w: String!, $a: Float!) { topUpWallet(walletId: $w, amount: $a) { walletId balance currency } }', {
        w: need(v, 'wallet'),
        a: amountFlag(need(v, 'amount'), 'amount'),
      }),
  },
  'operator:create': {
    flags: { name: { type: 'string' } },
    async run(rt, v) {
      const o = await admin<{ operatorId: string; token: string }>(rt, 'mutation($n: String!) { createOperator(name: $n) { operatorId token } }', {
        n: need(v, 'name'),
      });
      return { operatorId: o.operatorId, token: o.token };
    },
  },
  'operator:revoke': {
    flags: { operator: { type: 'string' } },
    run: (rt, v) => admin(rt, 'mutation($o: ID!) { revokeOperator(id: $o) { operatorId revokedAt } }', { o: need(v, 'operator') }),
  },
  'fees:set': {
    flags: { developer: { type: 'string' }, percent: { type: 'string' }, fixed: { type: 'string' } },
    run: (rt, v) =>
      admin(rt, 'mutation($d: ID!, $p: Float!, $f: Float!) { setFeeSchedule(developerId: $d, percent: $p, fixed: $f) { percent fixed isDefault updatedAt } }', {
        d: need(v, 'developer'),
        p: amountFlag(need(v, 'percent'), 'percent'),
        f: amountFlag(need(v, 'fixed'), 'fixed'),
      }),
  },
  'payouts:run': {
    flags: {},
    async run(rt) {
      return { payouts: await admin<number>(rt, 'mutation { runPayouts }') };
    },
  },
  'payout:paid': {
    flags: { payout: { type: 'string' }, 'bank-reference': { type: 'string' } },
    run: (rt, v) =>
      admin(rt, 'mutation($id: ID!, $r: String!) { markPayoutPaid(id: $id, bankReference: $r) { id status paidAt bankReference } }', {
        id: need(v, 'payout'),
        r: need(v, 'bank-reference'),
      }),
  },
  'payout:failed': {
    flags: { payout: { type: 'string' }, reason: { type: 'string' } },
    run: (rt, v) =>
      admin(rt, 'mutation($id: ID!, $r: String!) { markPayoutFailed(id: $id, reason: $r) { id status failureReason } }', {
        id: need(v, 'payout'),
        r: need(v, 'reason'),
      }),
  },
  'balance:adjust': {
    flags: { developer: { type: 'string' }, currency: { type: 'string' }, amount: { type: 'string' }, reason: { type: 'string' } },
    run(rt, v) {
      const amount = need(v, 'amount');
      if (!/^-?\d+(\.\d{1,2})?$/.test(amount)) throw new UsageError('--amount must be an amount with at most 2 decimals (negative to debit)');
      return admin(
        rt,
        'mutation($d: ID!, $c: String!, $a: Float!, $r: String!) { adjustBalance(developerId: $d, currency: $c, amount: $a, reason: $r) { id type amount fee net currency reference createdAt } }',
        { d: need(v, 'developer'), c: need(v, 'currency'), a: Number(amount), r: need(v, 'reason') },
      );
    },
  },
  'user:token': {
    flags: { username: { type: 'string' } },
    async run(rt, v) {
      const user = await rt.services.accounts.userByUsername(rt.db.sql, need(v, 'username'));
      return { token: await mintUserToken(rt.config, user.id, 24 * 3600) };
    },
  },
  'test-wallets': {
    flags: {},
    run: (rt) => listTestWallets({ config: rt.config, services: rt.services, logger: createLogger('silent') }),
  },
  demo: {
    flags: {},
    async run(rt) {
      const { developerId } = (await COMMANDS['developer:create']!.run(rt, { name: 'Demo Merchant' })) as { developerId: string };
      const key = (await COMMANDS['key:issue']!.run(rt, { developer: developerId })) as { keyId: string; secretKey: string };
      const users = [];
      for (const [username, phone] of [
        ['alice', '0911000001'],
        ['bob', '0911000002'],
      ] as const) {
        let walletId: string;
        let pin: string;
        try {
          ({ walletId, pin } = (await COMMANDS['user:create']!.run(rt, { username, phone, balance: '1000.00' })) as { walletId: string; pin: string });
        } catch (err) {
          if (!(err instanceof UsageError) || !/taken/.test(err.message)) throw err;
          walletId = await rt.services.accounts.walletIdFor(rt.db.sql, username);
          // An existing user gets a fresh PIN too (the old one was shown once and is gone).
          ({ pin } = (await COMMANDS['pin:reset']!.run(rt, { wallet: walletId })) as { pin: string });
        }
        const { token } = (await COMMANDS['user:token']!.run(rt, { username })) as { token: string };
        users.push({ username, phone, walletId, pin, userToken: token });
      }
      return { developerId, keyId: key.keyId, secretKey: key.secretKey, users };
    },
  },
};

async function run(argv: string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  if (!command) throw new UsageError(`a command is required\n\n${USAGE}`);
  if (command === '--help' || command === 'help') {
    io.stdout(`${USAGE}\n`);
    return 0;
  }
  if (isMerchantCommand(command)) return runMerchantCommand(command, rest, io);
  if (command === 'schema:emit') {
    let values: { out?: string | undefined };
    try {
      values = parseArgs({ args: rest, options: { out: { type: 'string' } }, strict: true }).values;
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const file = values.out ?? 'schema/schema.graphql';
    await writeFile(file, `${printSchema(await getSchema())}\n`);
    io.stdout(`${JSON.stringify({ file })}\n`);
    return 0;
  }
  const spec = COMMANDS[command];
  if (!spec && command !== 'migrate') throw new UsageError(`Unknown command "${command}"\n\n${USAGE}`);
  let values: Record<string, string | undefined>;
  try {
    values = parseArgs({ args: rest, options: spec?.flags ?? {}, strict: true, allowPositionals: false }).values as Record<
      string,
      string | undefined
    >;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const config = resolveStartupKeys(loadConfig(io.env));
  const db = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, poolMax: 2, migrate: true });
  try {
    if (command === 'migrate') {
      const executed = await db.orm.getMigrator().getExecutedMigrations();
      io.stdout(`${JSON.stringify({ migrated: executed.map((m) => m.name) })}\n`);
      return 0;
    }
    const services = createServices(config, db, createLogger('silent'));
    const contexts = { works: services.works, rateLimits: services.rateLimits, container: createResolvers(services) };
    const rt: Runtime = { config, db, schema: await getSchema(), services, contexts, runId: `cli-${randomUUID()}` };
    const output = await spec!.run(rt, values);
    io.stdout(`${JSON.stringify(output)}\n`);
    return 0;
  } finally {
    await db.close();
  }
}

/**
 * Runs one CLI command: one JSON object on stdout and exit code 0; a usage or business error is
 * one line on stderr and 2; anything else one line on stderr and 1 (never a stack trace).
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    return await run(argv, io);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    io.stderr(`wallet-gateway: ${message}\n`);
    return err instanceof UsageError || err instanceof AppError || err instanceof MerchantCommandError || err instanceof WalletGatewayError ? 2 : 1;
  }
}
