import Router from '@koa/router';
import { execute, parse, validate, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { Context as KoaContext } from 'koa';
import { AppError } from '../errors.js';
import { readJsonBody } from '../http/body.js';
import type { GatewayState } from '../http/state.js';
import type { Context } from '../context.js';
import { REST_ROUTES, type RestRoute } from './routes.js';
import { restErrorOf } from './graphql-errors.js';
import { fingerprint, parseIdempotencyKey, type IdempotencyStore } from './idempotency.js';

interface RestResponse {
  status: number;
  body: unknown;
}

function send(ctx: KoaContext, response: RestResponse): void {
  ctx.status = response.status;
  ctx.body = response.body;
}

interface PreparedRoute {
  route: RestRoute;
  document: DocumentNode;
  field: string;
}

function prepare(schema: GraphQLSchema, route: RestRoute): PreparedRoute {
  const document = parse(route.operation);
  const problems = validate(schema, document);
  if (problems.length > 0) throw new Error(`REST route ${route.method} ${route.path}: ${problems[0]!.message}`);
  const op = document.definitions[0] as OperationDefinitionNode;
  const field = op.selectionSet.selections[0];
  if (!field || field.kind !== 'Field') throw new Error(`REST route ${route.path} must select one root field`);
  return { route, document, field: field.name.value };
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
    const run = async (ctx: KoaContext, context: Context, body: unknown, idempotencyKey: string | null): Promise<RestResponse> => {
      const result = await execute({
        schema: deps.schema,
        document: prepared.document,
        variableValues: route.variables(ctx.params as Record<string, string>, body, idempotencyKey, ctx.query),
        contextValue: context,
      });
      if (!result.errors?.length) return { status: 200, body: (result.data as Record<string, unknown>)[prepared.field] };
      const reply = restErrorOf(result.errors);
      // Thrown, not answered here: the error boundary answers what is no answer to remember
      // (a 429 with its headers, a 5xx with the detail in the log), and the idempotency record is released.
      if (reply.kind !== 'expected' || reply.statusCode === 429) throw reply.cause;
      return { status: reply.statusCode, body: { statusCode: reply.statusCode, message: reply.message } };
    };

    const handler = async (ctx: KoaContext): Promise<void> => {
      ctx.state.route = `${route.method} /api/v1${route.path}`;
      const context = await deps.context(ctx);
      const body = route.body ? await readJsonBody(ctx) : undefined;
      if (route.body && (body === null || typeof body !== 'object' || Array.isArray(body))) {
        throw new AppError('BAD_USER_INPUT', 'Request body must be a JSON object');
      }
      const header = route.method === 'POST' ? ctx.get('idempotency-key') : '';
      const principal = context.principal;
      if (!header || principal.kind !== 'developer') {
        send(ctx, await run(ctx, context, body, null));
        return;
      }
      const key = parseIdempotencyKey(header);
      const claim = await deps.idempotency.claim(principal.developerId, key, fingerprint(route.method, ctx.path, body));
      switch (claim.kind) {
        case 'mismatch':
          throw new AppError('UNPROCESSABLE', 'Idempotency-Key was already used with a different request');
        case 'in_progress':
          throw new AppError('CONFLICT', 'A request with this Idempotency-Key is still being processed');
        case 'replay':
          ctx.set('Idempotent-Replayed', 'true');
          send(ctx, { status: claim.status, body: claim.body });
          return;
        case 'new':
          break;
        default: {
          const never: never = claim;
          throw new Error(`unknown claim ${String(never)}`);
        }
      }
      let response: RestResponse;
      try {
        response = await run(ctx, context, body, key);
      } catch (err) {
        await deps.idempotency.release(principal.developerId, key).catch(() => undefined);
        throw err;
      }
      // A call that failed validation (or failed on our side) is not remembered: it may be retried.
      if (response.status === 400 || response.status >= 500) await deps.idempotency.release(principal.developerId, key);
      else await deps.idempotency.complete(principal.developerId, key, response.status, response.body);
      send(ctx, response);
    };
    if (route.method === 'GET') router.get(route.path, handler);
    else if (route.method === 'DELETE') router.delete(route.path, handler);
    else router.post(route.path, handler);
  }
  return router;
}
