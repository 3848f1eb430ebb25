import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { homedir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { EVENT_TYPES, isEventType, WalletGateway, WalletGatewayConnectionError, WalletGatewayError, type EventType, type GatewayEvent } from '@wallet-gateway/client';
import { webhookHeaders } from '../webhooks/signing.js';

/**
 * The developer's commands of the CLI (issue 20): `listen` and `trigger` talk to a running
 * gateway over HTTP with the developer's own secret key, through the merchant's client
 * (`@wallet-gateway/client`), like the merchant's server does. They never open the database,
 * and this module imports only the client, the webhook signing (standardwebhooks) and Node's
 * own modules: `npx wallet-gateway listen|trigger` loads it without the gateway (merchant-main.ts).
 */

/** A mistake in how the command was called, or an answer that ends it: message on stderr, exit 2. */
export class MerchantCommandError extends Error {}

/** Where a run reads its settings and writes its output (see CliIo). */
export interface MerchantIo {
  env: NodeJS.ProcessEnv;
  stdout(text: string): void;
  stderr(text: string): void;
  /** Ends `listen` (SIGINT/SIGTERM in the executable). */
  signal?: AbortSignal | undefined;
}

export const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:3000';

/** How often `listen` asks for new events when it has read them all. */
const LISTEN_POLL_MS = 500;
/** How long one forward to the local receiver may take. */
const FORWARD_TIMEOUT_MS = 10_000;

interface Connection {
  key: string;
  url: string;
}

function connection(values: { key?: string | undefined; url?: string | undefined }, env: NodeJS.ProcessEnv): Connection {
  const key = values.key ?? env.WALLET_GATEWAY_KEY;
  if (!key) throw new MerchantCommandError('a secret key is required: --key sk_test_... or WALLET_GATEWAY_KEY');
  if (!/^sk_(test|live)_/.test(key)) throw new MerchantCommandError('--key must be a secret key (sk_test_... or sk_live_...)');
  const url = (values.url ?? env.WALLET_GATEWAY_URL ?? DEFAULT_GATEWAY_URL).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+$/.test(url)) throw new MerchantCommandError('--url must be the gateway\'s address, e.g. http://127.0.0.1:3000');
  return { key, url };
}

function parse<T extends Record<string, { type: 'string' }>>(args: string[], options: T, positionals: number) {
  try {
    const parsed = parseArgs({ args, options: { ...options, key: { type: 'string' }, url: { type: 'string' } }, strict: true, allowPositionals: positionals > 0 });
    if (parsed.positionals.length > positionals) throw new Error(`unexpected argument "${parsed.positionals[positionals]}"`);
    return parsed as { values: Partial<Record<keyof T | 'key' | 'url', string>>; positionals: string[] };
  } catch (err) {
    throw new MerchantCommandError((err as Error).message);
  }
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

// ---------------------------------------------------------------------------------------------
// listen

/** What `listen` keeps between runs: its signing secret and the events API cursor. */
interface ListenState {
  secret: string;
  /** The id of the last event read (forwarded or filtered out); null: from the first event. */
  after: string | null;
}

/** The default state file: one per gateway and developer, under $XDG_STATE_HOME (~/.local/state). */
function defaultStateFile(conn: Connection, env: NodeJS.ProcessEnv): string {
  let developer = conn.key;
  try {
    // The key's JWT payload (not verified: only to name the file; the gateway checks the key).
    const payload = conn.key.replace(/^sk_(test|live)_/, '').split('.')[1] ?? '';
    developer = String((JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { dev?: unknown }).dev ?? conn.key);
  } catch {
    /* not a key of ours: the gateway will say so; name the file after the key itself */
  }
  const id = createHash('sha256').update(`${conn.url}\n${developer}`).digest('hex').slice(0, 16);
  const base = env.XDG_STATE_HOME || path.join(env.HOME || homedir(), '.local', 'state');
  return path.join(base, 'wallet-gateway', `listen-${id}.json`);
}

async function loadState(file: string): Promise<ListenState | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  const state = JSON.parse(text) as Partial<ListenState>;
  if (typeof state.secret !== 'string' || !state.secret.startsWith('whsec_')) throw new MerchantCommandError(`${file} is not a listen state file`);
  return { secret: state.secret, after: typeof state.after === 'string' ? state.after : null };
}

async function saveState(file: string, state: ListenState): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(state)}\n`, { mode: 0o600 });
  await rename(temp, file);
}

/** The id of the newest event there is now (null when there is none): where a first `listen` starts. */
async function endOfStream(gateway: WalletGateway): Promise<string | null> {
  let after: string | undefined;
  for (;;) {
    const page = await gateway.events.list({ limit: 100, ...(after ? { after } : {}) });
    after = page.nextAfter ?? after;
    if (!page.hasMore) return after ?? null;
  }
}

/** A refused key ends the command (no retry cures it), naming what to fix; anything else is left to the caller. */
function refusedKey(err: unknown): void {
  if (err instanceof WalletGatewayError && (err.statusCode === 401 || err.statusCode === 403)) {
    throw new MerchantCommandError(`the gateway refused the key: ${err.message} (set --key or WALLET_GATEWAY_KEY)`);
  }
}

/** A gateway that cannot be reached: the message says which flag or variable sets the address. */
function namingUrl(err: unknown): unknown {
  if (err instanceof WalletGatewayConnectionError && !err.message.includes('WALLET_GATEWAY_URL')) {
    err.message = `${err.message} (is it running? set --url or WALLET_GATEWAY_URL)`;
  }
  return err;
}

/** One forward to the local receiver: signed like a gateway delivery, with `listen`'s own secret. */
async function forward(to: URL, secret: string, event: GatewayEvent): Promise<{ status: number | null; durationMs: number; error?: string }> {
  const body = JSON.stringify(event);
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  try {
    const res = await fetch(to, {
      method: 'POST',
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
      headers: { 'content-type': 'application/json', 'user-agent': 'wallet-gateway-listen/1', ...webhookHeaders([secret], event.id, body) },
    });
    await res.arrayBuffer().catch(() => undefined);
    return { status: res.status, durationMs: elapsed() };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    const error = e.name === 'TimeoutError' ? `timeout after ${FORWARD_TIMEOUT_MS} ms` : (e.cause?.code ?? e.message);
    return { status: null, durationMs: elapsed(), error };
  }
}

/**
 * `listen --forward-to URL [--events type,...]`: reads the developer's new events from the events
 * API and POSTs each to a local URL, signed (Standard Webhooks headers) with a `whsec_` secret of
 * its own that it prints first; one JSON line per event. The secret and the cursor are kept in a
 * state file, so a restart resumes after the last event read and the receiver's secret stays.
 */
async function listen(args: string[], io: MerchantIo): Promise<number> {
  const { values } = parse(args, { 'forward-to': { type: 'string' }, events: { type: 'string' }, state: { type: 'string' } }, 0);
  const conn = connection(values, io.env);
  const raw = values['forward-to'];
  if (!raw) throw new MerchantCommandError('--forward-to is required, e.g. --forward-to http://127.0.0.1:4000/webhooks');
  let forwardTo: URL;
  try {
    forwardTo = new URL(raw);
  } catch {
    throw new MerchantCommandError('--forward-to must be an http(s) URL');
  }
  if (forwardTo.protocol !== 'http:' && forwardTo.protocol !== 'https:') throw new MerchantCommandError('--forward-to must be an http(s) URL');
  let wanted: ReadonlySet<string> | undefined;
  if (values.events !== undefined) {
    const types = values.events.split(',').map((t) => t.trim());
    const unknown = types.find((t) => !isEventType(t));
    if (unknown !== undefined) throw new MerchantCommandError(`--events: unknown event type "${unknown}"; known: ${EVENT_TYPES.join(', ')}`);
    wanted = new Set(types);
  }
  const file = values.state ?? defaultStateFile(conn, io.env);
  const gateway = new WalletGateway({ secretKey: conn.key, baseUrl: conn.url });
  let state = await loadState(file);
  /** Whether the cursor is set: a first run forwards what happens from now on, not the account's history. */
  let started = state !== undefined;
  state ??= { secret: `whsec_${randomBytes(32).toString('base64')}`, after: null };
  const start = async (s: ListenState): Promise<void> => {
    s.after = await endOfStream(gateway);
    await saveState(file, s);
    started = true;
  };
  // Where it starts is settled before the first line, so everything after that line is forwarded
  // (unless the gateway cannot be reached yet: then the loop settles it).
  if (!started) await start(state).catch((err: unknown) => refusedKey(err));
  io.stdout(`${JSON.stringify({ secret: state.secret, forwardTo: forwardTo.href })}\n`);

  /** The problem last reported on stderr (reported once, until the gateway answers again). */
  let failing: string | null = null;
  while (!io.signal?.aborted) {
    try {
      if (!started) await start(state);
      const page = await gateway.events.list({ limit: 100, ...(state.after ? { after: state.after } : {}) });
      if (failing !== null) io.stderr('wallet-gateway listen: the gateway answers again\n');
      failing = null;
      for (const event of page.data) {
        if (!wanted || wanted.has(event.type)) {
          const result = await forward(forwardTo, state.secret, event);
          io.stdout(`${JSON.stringify({ eventId: event.id, type: event.type, ...result })}\n`);
        }
        state.after = event.id;
        await saveState(file, state);
      }
      if (!page.hasMore) await sleep(LISTEN_POLL_MS, io.signal);
    } catch (err) {
      refusedKey(err);
      if (err instanceof WalletGatewayError && err.statusCode === 404 && state.after !== null) {
        io.stderr(`wallet-gateway listen: the saved cursor ${state.after} is unknown to this gateway; starting from its newest event\n`);
        started = false;
        continue;
      }
      if (!(err instanceof WalletGatewayError || err instanceof WalletGatewayConnectionError)) throw err;
      namingUrl(err);
      if (err.message !== failing) io.stderr(`wallet-gateway listen: ${err.message}; retrying\n`);
      failing = err.message;
      await sleep(1000, io.signal);
    }
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// trigger

/** How `trigger` makes each event happen: a payment request to a test wallet (and a cancel). */
/** A trigger's plan: a request to `wallet`, then a cancel, or (MANUAL) a capture or void once the test wallet's approval held it. */
type TriggerPlan = { wallet: string; cancel?: true; held?: 'capture' | 'void' };

const TRIGGERS: Readonly<Partial<Record<EventType, TriggerPlan>>> = {
  'payment_request.created': { wallet: 'test_expire' },
  'payment_request.approved': { wallet: 'test_approve' },
  'payment_request.rejected': { wallet: 'test_reject' },
  'payment_request.cancelled': { wallet: 'test_expire', cancel: true },
  'payment_request.expired': { wallet: 'test_expire_soon' },
  'transaction.captured': { wallet: 'test_approve', held: 'capture' },
  'transaction.voided': { wallet: 'test_approve', held: 'void' },
};

/** The payout events and the outcome `triggerPayout` gives the payout. */
const PAYOUT_TRIGGERS = { 'payout.created': 'PENDING', 'payout.paid': 'PAID', 'payout.failed': 'FAILED' } as const;

/**
 * `trigger payout.created|payout.paid|payout.failed`: the developer is paid (a payment request to
 * `test_approve`), then the development gateway's `triggerPayout` makes a payout of its available
 * balance now (and marks it PAID or FAILED), and the event is awaited in the events API. Prints
 * `{ type, payoutId, eventId }`.
 */
async function triggerPayout(type: keyof typeof PAYOUT_TRIGGERS, conn: Connection, timeout: string | undefined, io: MerchantIo): Promise<number> {
  if (conn.key.startsWith('sk_live_')) throw new MerchantCommandError('trigger works against development gateways only (sk_test_ keys)');
  const timeoutSeconds = timeout === undefined ? 60 : Number(timeout);
  if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1) throw new MerchantCommandError('--timeout must be a whole number of seconds');
  const gateway = new WalletGateway({ secretKey: conn.key, baseUrl: conn.url });
  const walletId = await gateway.accounts.walletId('test_approve').catch((err: unknown) => {
    refusedKey(err);
    if (err instanceof WalletGatewayError && err.statusCode === 404) {
      throw new MerchantCommandError('this gateway has no test wallet test_approve: trigger works against development gateways with their test wallets');
    }
    throw err;
  });
  const created = await gateway.paymentRequests.create({ walletId, amount: 10, description: `Triggered ${type}`, merchantName: 'wallet-gateway trigger', reference: `trigger:${type}` });
  const outcome = await gateway.waitForOutcome(created.paymentRequestId!, { timeoutMs: timeoutSeconds * 1000 });
  if (outcome.status !== 'APPROVED') throw new MerchantCommandError(`payment request ${created.paymentRequestId} ended ${outcome.status}, not APPROVED`);
  // The developer's own (development-only) GraphQL mutation: the REST contract has no payout door for merchants.
  const res = await fetch(`${conn.url}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${conn.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query: 'mutation($o: PayoutStatus) { triggerPayout(outcome: $o) { id } }', variables: { o: PAYOUT_TRIGGERS[type] } }),
  });
  const body = (await res.json().catch(() => ({}))) as { data?: { triggerPayout?: { id: string } }; errors?: Array<{ message: string }> };
  const payoutId = body.data?.triggerPayout?.id;
  if (!payoutId) throw new MerchantCommandError(`the gateway made no payout: ${body.errors?.[0]?.message ?? `HTTP ${res.status}`}`);
  const deadline = Date.now() + timeoutSeconds * 1000;
  for (;;) {
    for await (const event of eventsOf(gateway, type)) {
      if ((event.data as { id?: string }).id === payoutId) {
        io.stdout(`${JSON.stringify({ type, payoutId, eventId: event.id })}\n`);
        return 0;
      }
    }
    if (Date.now() >= deadline) throw new MerchantCommandError(`payout ${payoutId} was made, but no ${type} event within ${timeoutSeconds} s`);
    await sleep(250);
  }
}

/** Every event of one type in the events API, oldest first. */
async function* eventsOf(gateway: WalletGateway, type: EventType): AsyncGenerator<GatewayEvent> {
  let after: string | undefined;
  for (;;) {
    const page = await gateway.events.list({ type, limit: 100, ...(after ? { after } : {}) });
    yield* page.data;
    if (!page.hasMore || !page.nextAfter) return;
    after = page.nextAfter;
  }
}

/**
 * `trigger <event type>`: makes the event happen on a development gateway with its test wallets
 * (a payment request to the wallet whose scripted answer produces it; a cancel; an expiry through
 * `test_expire_soon`, whose requests live seconds) and waits until the events API has it.
 */
async function trigger(args: string[], io: MerchantIo): Promise<number> {
  const { values, positionals } = parse(args, { timeout: { type: 'string' } }, 1);
  const conn = connection(values, io.env);
  const type = positionals[0];
  const known = [...Object.keys(TRIGGERS), ...Object.keys(PAYOUT_TRIGGERS)].join(', ');
  if (!type) throw new MerchantCommandError(`an event type is required: ${known}`);
  if (type in PAYOUT_TRIGGERS) return triggerPayout(type as keyof typeof PAYOUT_TRIGGERS, conn, values.timeout, io);
  if (type === 'transaction.refunded') {
    throw new MerchantCommandError('transaction.refunded follows an operator\'s refund (admin GraphQL refundTransaction); a secret key cannot trigger it');
  }
  const plan = isEventType(type) ? TRIGGERS[type] : undefined;
  if (!plan) throw new MerchantCommandError(`cannot trigger "${type}"; it can trigger: ${known}`);
  if (conn.key.startsWith('sk_live_')) throw new MerchantCommandError('trigger works against development gateways only (sk_test_ keys)');
  const timeoutSeconds = values.timeout === undefined ? 60 : Number(values.timeout);
  if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1) throw new MerchantCommandError('--timeout must be a whole number of seconds');

  const gateway = new WalletGateway({ secretKey: conn.key, baseUrl: conn.url });
  let walletId: string;
  try {
    walletId = await gateway.accounts.walletId(plan.wallet);
  } catch (err) {
    refusedKey(err);
    if (err instanceof WalletGatewayError && err.statusCode === 404) {
      throw new MerchantCommandError(`this gateway has no test wallet ${plan.wallet}: trigger works against development gateways with their test wallets`);
    }
    throw err;
  }
  const created = await gateway.paymentRequests.create({
    walletId,
    amount: 1,
    description: `Triggered ${type}`,
    merchantName: 'wallet-gateway trigger',
    reference: `trigger:${type}`,
    ...(plan.held ? { capture: 'MANUAL' as const } : {}),
  });
  const paymentRequestId = created.paymentRequestId!;
  if (plan.cancel) await gateway.paymentRequests.cancel(paymentRequestId);
  const deadline = Date.now() + timeoutSeconds * 1000;
  if (plan.held) {
    // The test wallet approves after SANDBOX_DELAY_MS, which holds the amount; then capture or void it.
    const outcome = await gateway.waitForOutcome(paymentRequestId, { timeoutMs: timeoutSeconds * 1000 });
    const transactionId = outcome.paymentRequest.transactionId;
    if (!transactionId) throw new MerchantCommandError(`payment request ${paymentRequestId} ended ${outcome.paymentRequest.status}, not held`);
    if (plan.held === 'capture') await gateway.transactions.capture(transactionId);
    else await gateway.transactions.void(transactionId);
  }
  for (;;) {
    const page = await gateway.events.list({ paymentRequestId, type: type as EventType, limit: 1 });
    const event = page.data[0];
    if (event) {
      io.stdout(`${JSON.stringify({ type, paymentRequestId, eventId: event.id })}\n`);
      return 0;
    }
    if (Date.now() >= deadline) {
      throw new MerchantCommandError(`payment request ${paymentRequestId} was made, but no ${type} event within ${timeoutSeconds} s`);
    }
    await sleep(250);
  }
}

// ---------------------------------------------------------------------------------------------
// getting paid: balance, payouts, payout:report

/** `balance`: the developer's balance per currency (available, in payouts). */
async function balance(args: string[], io: MerchantIo): Promise<number> {
  const { values } = parse(args, {}, 0);
  const conn = connection(values, io.env);
  const gateway = new WalletGateway({ secretKey: conn.key, baseUrl: conn.url });
  io.stdout(`${JSON.stringify(await gateway.balance().catch(rethrowRefusedKey))}\n`);
  return 0;
}

/** `payouts [--status S] [--limit N] [--after ID]`: a page of the developer's payouts, newest first. */
async function payouts(args: string[], io: MerchantIo): Promise<number> {
  const { values } = parse(args, { status: { type: 'string' }, limit: { type: 'string' }, after: { type: 'string' } }, 0);
  const conn = connection(values, io.env);
  const status = values.status?.toUpperCase();
  if (status !== undefined && !['PENDING', 'PAID', 'FAILED'].includes(status)) throw new MerchantCommandError('--status must be PENDING, PAID or FAILED');
  const limit = values.limit === undefined ? undefined : Number(values.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 100)) throw new MerchantCommandError('--limit must be a whole number from 1 to 100');
  const gateway = new WalletGateway({ secretKey: conn.key, baseUrl: conn.url });
  const page = await gateway.payouts
    .list({ ...(status ? { status: status as 'PENDING' | 'PAID' | 'FAILED' } : {}), ...(limit ? { limit } : {}), ...(values.after ? { after: values.after } : {}) })
    .catch(rethrowRefusedKey);
  io.stdout(`${JSON.stringify(page)}\n`);
  return 0;
}

/**
 * `payout:report <payoutId> [--out FILE]`: the payout's reconciliation report (CSV) on stdout as
 * it streams in, or into FILE (then one JSON line `{ file, bytes }`); memory stays flat whatever
 * its size.
 */
async function payoutReport(args: string[], io: MerchantIo): Promise<number> {
  const { values, positionals } = parse(args, { out: { type: 'string' } }, 1);
  const conn = connection(values, io.env);
  const id = positionals[0];
  if (!id) throw new MerchantCommandError('a payout id is required: payout:report <payoutId> [--out FILE]');
  const gateway = new WalletGateway({ secretKey: conn.key, baseUrl: conn.url });
  const stream = Readable.fromWeb((await gateway.payoutReport(id, { stream: true }).catch(rethrowRefusedKey)) as WebReadableStream<Uint8Array>);
  if (values.out !== undefined) {
    let bytes = 0;
    stream.on('data', (chunk: Buffer) => (bytes += chunk.length));
    await pipeline(stream, createWriteStream(values.out));
    io.stdout(`${JSON.stringify({ file: values.out, bytes })}\n`);
    return 0;
  }
  const decoder = new TextDecoder();
  for await (const chunk of stream) io.stdout(decoder.decode(chunk as Buffer, { stream: true }));
  io.stdout(decoder.decode());
  return 0;
}

/** A refused key ends the command naming what to fix; anything else goes on up. */
function rethrowRefusedKey(err: unknown): never {
  refusedKey(err);
  throw err;
}

/** The developer commands of this module (bin/wallet-gateway.js runs them without loading the gateway). */
export const MERCHANT_COMMANDS = ['listen', 'trigger', 'balance', 'payouts', 'payout:report'] as const;
export type MerchantCommand = (typeof MERCHANT_COMMANDS)[number];
export const isMerchantCommand = (value: unknown): value is MerchantCommand => (MERCHANT_COMMANDS as readonly unknown[]).includes(value);

const RUN: Record<MerchantCommand, (args: string[], io: MerchantIo) => Promise<number>> = {
  listen,
  trigger,
  balance,
  payouts,
  'payout:report': payoutReport,
};

/** Usage lines of these commands (the CLI's help). */
export const MERCHANT_USAGE = `Developer commands (over HTTP to a running gateway, with your secret key):
  listen --forward-to URL [--events type,...] [--state FILE]
                                                 -> {secret, forwardTo}, then one line per event
                                                    {eventId, type, status, durationMs}
  trigger <event type> [--timeout S]             -> {type, paymentRequestId, eventId}  (development only)
  balance                                        -> {balances: [{currency, available, inPayouts}]}
  payouts [--status PENDING|PAID|FAILED] [--limit N] [--after ID]
                                                 -> {data: [payout...], hasMore, nextAfter}
  payout:report <payoutId> [--out FILE]          -> the payout's CSV report on stdout (or {file, bytes})
  All take --key sk_... (or WALLET_GATEWAY_KEY) and --url http://host:port (or WALLET_GATEWAY_URL,
  default ${DEFAULT_GATEWAY_URL}).`;

/** Runs one of the developer commands. */
export async function runMerchantCommand(command: MerchantCommand, args: string[], io: MerchantIo): Promise<number> {
  try {
    return await RUN[command](args, io);
  } catch (err) {
    throw namingUrl(err);
  }
}

/**
 * `listen` or `trigger` as the executable runs them (src/cli/merchant-main.ts): like `runCli`, one
 * line on stderr and exit 2 for a mistake or a refusal, 1 for anything else, never a stack trace.
 */
export async function runMerchantCli(command: MerchantCommand, args: string[], io: MerchantIo): Promise<number> {
  try {
    return await runMerchantCommand(command, args, io);
  } catch (err) {
    io.stderr(`wallet-gateway: ${err instanceof Error ? err.message : String(err)}\n`);
    return err instanceof MerchantCommandError || err instanceof WalletGatewayError ? 2 : 1;
  }
}
