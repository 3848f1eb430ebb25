import Router from '@koa/router';
import { execute, parse, validate, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { Context as KoaContext } from 'koa';
import { AppError } from '../errors.js';
import { readJsonBody } from '../http/body.js';
import type { GatewayState } from '../http/state.js';
import type { Context } from '../context.js';
import { REST_ROUTES, type RestRoute } from './routes.js';
import { restErrorOf } from './graphql-errors.js';
import { IdempotentCall, fingerprint, parseIdempotencyKey, type Claim, type IdempotencyStore } from './idempotency.js';
import { graphqlOperationSpan, tracing } from '../observability/tracing.js';

interface RestResponse {
  status: number;
  body: unknown;
}

function send(ctx: KoaContext, response: RestResponse): void {
  ctx.status = response.status;
  ctx.body = response.body;
}

/** The answer to a call whose Idempotency-Key was already used: the stored response, 422 or 409. */
function answerClaim(ctx: KoaContext, claim: Exclude<Claim, { kind: 'new' }>): void {
  switch (claim.kind) {
    case 'mismatch':
      throw new AppError('UNPROCESSABLE', 'Idempotency-Key was already used with a different request');
    case 'in_progress':
      // Retry-After marks the one 409 that a retry with the same key resolves (clients retry on it).
      throw new AppError('CONFLICT', 'A request with this Idempotency-Key is still being processed', { 'Retry-After': '1' });
    case 'replay':
      ctx.set('Idempotent-Replayed', 'true');
      send(ctx, { status: claim.status, body: claim.body });
      return;
    default: {
      const never: never = claim;
      throw new Error(`unknown claim ${String(never)}`);
    }
  }
}

/** Whether an answer is stored for its Idempotency-Key: not a refused body (400), which may be retried, nor a failure of ours (5xx). */
const remembered = (status: number): boolean => status !== 400 && status < 500;

interface KeyRecord {
  store: IdempotencyStore;
  developerId: string;
  key: string;
  print: string;
}

/**
 * Claims the key on its own and answers from its record if it was used already; else answers
 * with `respond()` and stores that answer (SPEC §10), or releases the key when it is not to be
 * remembered.
 */
async function answerRemembered(ctx: KoaContext, record: KeyRecord, respond: () => Promise<RestResponse>): Promise<void> {
  const { store, developerId, key, print } = record;
  const claim = await store.claim(developerId, key, print);
  if (claim.kind !== 'new') {
    answerClaim(ctx, claim);
    return;
  }
  let response: RestResponse;
  try {
    response = await respond();
  } catch (err) {
    await store.release(developerId, key).catch(() => undefined);
    throw err;
  }
  if (remembered(response.status)) await store.complete(developerId, key, response.status, response.body);
  else await store.release(developerId, key);
  send(ctx, response);
}

interface PreparedRoute {
  route: RestRoute;
  document: DocumentNode;
  field: string;
  /** The operation compiled once (graphql-jit): the same resolvers, auth checks and errors, less per-call work. */
  compiled: CompiledQuery;
}

function prepare(schema: GraphQLSchema, route: RestRoute): PreparedRoute {
  const document = parse(route.operation);
  const problems = validate(schema, document);
  if (problems.length > 0) throw new Error(`REST route ${route.method} ${route.path}: ${problems[0]!.message}`);
  const op = document.definitions[0] as OperationDefinitionNode;
  const field = op.selectionSet.selections[0];
  if (!field || field.kind !== 'Field') throw new Error(`REST route ${route.path} must select one root field`);
  const compiled = compileQuery(schema, document);
  if (!isCompiledQuery(compiled)) throw new Error(`REST route ${route.path} does not compile: ${compiled.errors?.[0]?.message}`);
  return { route, document, field: field.name.value, compiled };
}

export interface RestDeps {
  schema: GraphQLSchema;
  /** Builds the GraphQL context of a REST call (authenticated developer, fresh EntityManager). */
  context(ctx: KoaContext): Promise<Context>;
  /** Idempotency-Key records of the POST routes. */
  idempotency: IdempotencyStore;
}

/**
 * The REST door: every route of the table runs its GraphQL operation against the one schema
 * and answers with the selected root field, or with the Error body of the first error. POST
 * routes honour Idempotency-Key (SPEC §10).
 */
export function createRestRouter(deps: RestDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ prefix: '/api/v1' });
  for (const route of REST_ROUTES) {
    const prepared = prepare(deps.schema, route);
    /** Runs the route's operation; returns the response, or throws what the error boundary answers. */
    const operation = async (ctx: KoaContext, context: Context, body: unknown, idempotencyKey: string | null): Promise<RestResponse> => {
      const variableValues = route.variables(ctx.params as Record<string, string>, body, idempotencyKey, ctx.query);
      let result: ExecutionResult = await prepared.compiled.query(undefined, context, variableValues);
      // The variables did not fit (nothing ran): graphql-js words that error, as every door does.
      if (result.data === undefined && result.errors?.length) {
        result = await execute({ schema: deps.schema, document: prepared.document, variableValues, contextValue: context });
      }
      if (!result.errors?.length) return { status: 200, body: (result.data as Record<string, unknown>)[prepared.field] };
      const used = result.errors.find((e) => e.originalError instanceof IdempotentCall)?.originalError as IdempotentCall | undefined;
      if (used) throw used;
      const reply = restErrorOf(result.errors);
      // Thrown, not answered here: the error boundary answers what is no answer to remember
      // (a 429 with its headers, a 5xx with the detail in the log), and the idempotency record is released.
      if (reply.kind !== 'expected' || reply.statusCode === 429) throw reply.cause;
      return { status: reply.statusCode, body: { statusCode: reply.statusCode, message: reply.message } };
    };
    // With tracing on, the operation is a span of its own (a child of the HTTP span, parent of its resolvers).
    const run: typeof operation = tracing.on
      ? (...args) => graphqlOperationSpan(prepared.document, undefined, 'http', () => operation(...args))
      : operation;

    const handler = async (ctx: KoaContext): Promise<void> => {
      ctx.state.route = `${route.method} /api/v1${route.path}`;
      const context = await deps.context(ctx);
      const body = route.body ? await readJsonBody(ctx) : undefined;
      if (route.body && (body === null || typeof body !== 'object' || Array.isArray(body))) {
        throw new AppError('BAD_USER_INPUT', 'Request body must be a JSON object');
      }
      // A header sent empty is a bad key (400), not a missing one: `ctx.get` answers '' for both.
      const header = route.method === 'POST' ? ctx.headers['idempotency-key'] : undefined;
      const principal = context.principal;
      if (header === undefined || principal.kind !== 'developer') {
        send(ctx, await run(ctx, context, body, null));
        return;
      }
      const key = parseIdempotencyKey(Array.isArray(header) ? header.join(', ') : header);
      const print = fingerprint(route.method, ctx.path, body);
      const record = { store: deps.idempotency, developerId: principal.developerId, key, print };
      if (!route.claimInside) {
        await answerRemembered(ctx, record, () => run(ctx, context, body, key));
        return;
      }
      // The operation claims the key in its own transaction and completes the record there.
      context.idempotency = { key, fingerprint: print };
      let inside: RestResponse;
      try {
        inside = await run(ctx, context, body, key);
      } catch (err) {
        if (!(err instanceof IdempotentCall)) throw err;
        answerClaim(ctx, err.claim);
        return;
      }
      // A key already used still answers as it would have before the call ran (e.g. 422 for
      // another body), also when this body was refused.
      const standing = inside.status === 400 ? await deps.idempotency.standing(principal.developerId, key, print) : undefined;
      if (standing) answerClaim(ctx, standing);
      // A success was recorded with the write; what is not remembered needs no record.
      else if (inside.status === 200 || !remembered(inside.status)) send(ctx, inside);
      // Any other answer (the write rolled back, e.g. 404, 409) is remembered on its own.
      else await answerRemembered(ctx, record, async () => inside);
    };
    if (route.method === 'GET') router.get(route.path, handler);
    else if (route.method === 'DELETE') router.delete(route.path, handler);
    else router.post(route.path, handler);
  }
  return router;
}
