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
import { fingerprint, keyed, parseIdempotencyKey, send, type IdempotencyStore, type RestResponse } from './idempotency.js';
import { graphqlOperationSpan, tracing } from '../observability/tracing.js';
import { sendRateLimit } from '../http/operation-context.js';

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
      try {
        await answer(ctx, context);
      } finally {
        sendRateLimit(ctx, context);
      }
    };
    const answer = async (ctx: KoaContext, context: Context): Promise<void> => {
      const body = route.body ? await readJsonBody(ctx) : undefined;
      const absent = route.optionalBody === true && body === undefined;
      if (route.body && !absent && (body === null || typeof body !== 'object' || Array.isArray(body))) {
        throw new AppError('BAD_USER_INPUT', 'Request body must be a JSON object');
      }
      // A header sent empty is a bad key (400), not a missing one: `ctx.get` answers '' for both.
      const header = route.method === 'POST' ? ctx.headers['idempotency-key'] : undefined;
      const principal = context.principal;
      if (header === undefined || principal.kind !== 'developer') {
        const response = await run(ctx, context, body, null);
        if (route.reply && response.status === 200) await route.reply(ctx, response.body);
        else send(ctx, response);
        return;
      }
      const key = parseIdempotencyKey(Array.isArray(header) ? header.join(', ') : header);
      const call = { store: deps.idempotency, developerId: principal.developerId, key, print: fingerprint(route.method, ctx.path, body) };
      await keyed(ctx, context.work, call, () => run(ctx, context, body, key));
    };
    if (route.method === 'GET') router.get(route.path, handler);
    else if (route.method === 'DELETE') router.delete(route.path, handler);
    else router.post(route.path, handler);
  }
  return router;
}
