import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import type { Logger } from 'pino';
import { AppError, INTERNAL_MESSAGE, isDatabaseUnavailable } from './errors.js';

/**
 * The GraphQL doors' error boundary (Apollo's formatError, graphql-ws results): typed errors and
 * GraphQL's own request errors pass with their code; anything else becomes `Internal server
 * error` (or 503 while the database is unreachable). The detail goes to `logger` when one is
 * given (the request's own logger, so the line carries its requestId).
 */
export function formatGraphQLError(formatted: GraphQLFormattedError, error: unknown, logger?: Logger): GraphQLFormattedError {
  const original = unwrapResolverError(error);
  if (original instanceof AppError) {
    return { message: formatted.message, locations: formatted.locations, path: formatted.path, extensions: { code: original.code, statusCode: original.statusCode } };
  }
  if (original instanceof GraphQLError) {
    const { stacktrace: _stack, ...extensions } = formatted.extensions ?? {};
    return { ...formatted, extensions: { code: 'BAD_USER_INPUT', statusCode: 400, ...extensions } };
  }
  if (isDatabaseUnavailable(original)) {
    return { message: 'Service temporarily unavailable', path: formatted.path, extensions: { code: 'SERVICE_UNAVAILABLE', statusCode: 503 } };
  }
  logger?.error({ err: original }, 'unexpected GraphQL error');
  return { message: INTERNAL_MESSAGE, path: formatted.path, extensions: { code: 'INTERNAL_SERVER_ERROR', statusCode: 500 } };
}

/** True for an error no client should see the detail of (neither typed nor a GraphQL request error). */
export function isUnexpectedError(error: unknown): boolean {
  const original = unwrapResolverError(error);
  return !(original instanceof GraphQLError) && !isDatabaseUnavailable(original);
}
