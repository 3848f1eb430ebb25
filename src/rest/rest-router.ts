import Router from '@koa/router';
import { execute, parse, validate, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { Context as KoaContext } from 'koa';
import { AppError, isDatabaseUnavailable } from '../errors.js';
import { readJsonBody } from '../http/body.js';
import type { GatewayState } from '../http/state.js';
import type { Context } from '../context.js';
import { REST_ROUTES, type RestRoute } from './routes.js';
import { restErrorOf } from './graphql-errors.js';

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
  /** Called with the context after the operation ran (response headers such as RateLimit-*). */
  onResult?(ctx: KoaContext, context: Context): void;
}

/**
 * The REST door: every route of the table runs its GraphQL operation against the one schema
 * and answers with the selected root field, or with the Error body of the first error.
 */
export function createRestRouter(deps: RestDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ prefix: '/api/v1' });
  for (const route of REST_ROUTES) {
    const prepared = prepare(deps.schema, route);
    const handler = async (ctx: KoaContext): Promise<void> => {
      ctx.state.route = `${route.method} /api/v1${route.path}`;
      const context = await deps.context(ctx);
      const body = route.body ? await readJsonBody(ctx) : undefined;
      if (route.body && (body === null || typeof body !== 'object' || Array.isArray(body))) {
        throw new AppError('BAD_USER_INPUT', 'Request body must be a JSON object');
      }
      const result = await execute({
        schema: deps.schema,
        document: prepared.document,
        variableValues: route.variables(ctx.params as Record<string, string>, body),
        contextValue: context,
      });
      deps.onResult?.(ctx, context);
      const first = result.errors?.[0];
      if (first) {
        if (first.originalError instanceof AppError && first.originalError.code === 'RATE_LIMITED') throw first.originalError;
        const mapped = restErrorOf(result.errors!);
        if (mapped.internal) {
          if (isDatabaseUnavailable(first.originalError)) throw new AppError('SERVICE_UNAVAILABLE', 'Service temporarily unavailable');
          throw first.originalError ?? first;
        }
        ctx.status = mapped.statusCode;
        ctx.body = { statusCode: mapped.statusCode, message: mapped.message };
        return;
      }
      ctx.status = 200;
      ctx.body = (result.data as Record<string, unknown>)[prepared.field];
    };
    if (route.method === 'GET') router.get(route.path, handler);
    else router.post(route.path, handler);
  }
  return router;
}
