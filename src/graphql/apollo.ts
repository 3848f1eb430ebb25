import { ApolloServer, HeaderMap } from '@apollo/server';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { GraphQLError, type GraphQLSchema, type ValidationRule } from 'graphql';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Context } from '../context.js';
import { describeError, errorExtensions } from '../errors.js';
import { formatGraphQLError, isUnexpectedError } from './format-error.js';
import { unwrapResolverError } from '@apollo/server/errors';
import { nameApolloOperation, tracing } from '../observability/tracing.js';
import { PARSE_OPTIONS } from './document-limits.js';
import { costError, costLimitOf } from './cost.js';

export interface ApolloOptions {
  schema: GraphQLSchema;
  config: Config;
  logger: Logger;
  validationRules: readonly ValidationRule[];
}

/** Apollo Server for the GraphQL HTTP door: limits and one error format (the HTTP drain is src/http/drain.ts). */
export async function createApollo({ schema, config, logger, validationRules }: ApolloOptions): Promise<ApolloServer<Context>> {
  const apollo = new ApolloServer<Context>({
    schema,
    introspection: config.appEnv !== 'production',
    // Without introspection, "Did you mean …?" in validation errors would still reveal the schema.
    hideSchemaDetailsFromClientErrors: config.appEnv === 'production',
    csrfPrevention: true,
    allowBatchedHttpRequests: false,
    // No automatic persisted queries: nothing uses them, and a hash mismatch came out as INTERNAL_SERVER_ERROR.
    persistedQueries: false,
    includeStacktraceInErrorResponses: false,
    // main.ts owns the signals (drain, close the pool, exit 0); Apollo's own handler would re-raise SIGTERM.
    stopOnTerminationSignals: false,
    validationRules: [...validationRules],
    // The door has bounded the document's size and nesting already (src/http/apollo-koa.ts).
    parseOptions: PARSE_OPTIONS,
    plugins: [
      // No Apollo landing page (it loads from a CDN); development serves GraphiQL instead (src/sandbox).
      ApolloServerPluginLandingPageDisabled(),
      {
        async requestDidStart() {
          return {
            async didResolveOperation({ operation, document, operationName, request, contextValue }) {
              if (tracing.on) nameApolloOperation(operation);
              // graphql-js would "execute" a subscription once over HTTP and fail on its null root (a 500).
              if (operation?.operation === 'subscription') {
                throw new GraphQLError('Subscriptions are served over WebSocket (graphql-ws) on /graphql', {
                  extensions: { code: 'BAD_USER_INPUT', statusCode: 400, http: { status: 400 } },
                });
              }
              // The cost limit of the caller's credential, with the operation's variables (src/graphql/cost.ts).
              const tooCostly = costError(schema, document, request.variables, operationName ?? undefined, costLimitOf(config, contextValue?.principal));
              if (tooCostly) throw new GraphQLError(tooCostly.message, { extensions: { ...tooCostly.extensions, http: { status: 400 } } });
            },
            async didEncounterErrors({ errors, contextValue }) {
              for (const error of errors) {
                if (isUnexpectedError(error)) (contextValue?.log ?? logger).error({ err: unwrapResolverError(error) }, 'unexpected GraphQL error');
              }
            },
          };
        },
      },
    ],
    // formatError has no context; the plugin above logs unexpected errors with the request's logger.
    formatError: (formatted, error) => formatGraphQLError(formatted, error),
  });
  await apollo.start();
  return apollo;
}

/**
 * An error raised while building an operation's context (authentication, the rate limit), in
 * the form Apollo answers with its own HTTP status and headers.
 */
export function contextError(err: unknown): unknown {
  const reply = describeError(err);
  if (reply.kind !== 'expected') return err;
  const headers = new HeaderMap();
  for (const [name, value] of Object.entries(reply.headers)) headers.set(name.toLowerCase(), value);
  return new GraphQLError(reply.message, {
    extensions: { ...errorExtensions(reply), http: { status: reply.statusCode, headers } },
  });
}
