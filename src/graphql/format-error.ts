import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import type { Logger } from 'pino';
import { AppError, describeError, errorExtensions } from '../errors.js';

/**
 * The GraphQL doors' error boundary (Apollo's formatError, graphql-ws results): what a client
 * sees of an error comes from `describeError`, the one translation every door uses; GraphQL's
 * own request errors keep their message and extensions. The detail of an unexpected error goes
 * to `logger` when one is given (the request's own logger, so the line carries its requestId).
 */
export function formatGraphQLError(formatted: GraphQLFormattedError, error: unknown, logger?: Logger): GraphQLFormattedError {
  const reply = describeError(error);
  const extensions = errorExtensions(reply);
  switch (reply.kind) {
    case 'expected': {
      // Typed errors say exactly their code and status; GraphQL's request errors keep their own extensions.
      const requestError = reply.cause instanceof GraphQLError && !(reply.cause instanceof AppError);
      const { stacktrace: _stack, ...own } = requestError ? (formatted.extensions ?? {}) : {};
      const message = requestError ? withoutInputValues(reply.message) : reply.message;
      return { message, locations: formatted.locations, path: formatted.path, extensions: { ...extensions, ...own } };
    }
    case 'unavailable':
      return { message: reply.message, path: formatted.path, extensions };
    case 'unexpected':
      logger?.error({ err: reply.cause }, 'unexpected GraphQL error');
      return { message: reply.message, path: formatted.path, extensions };
    default: {
      const never: never = reply.kind;
      throw new Error(`unknown error kind ${String(never)}`);
    }
  }
}

/**
 * A scalar's coercion message quotes the value that did not fit (`String cannot represent a non
 * string value: 123456`); ours names the type only, since the value may be a secret such as a
 * transaction PIN.
 */
export function withoutInputValues(message: string): string {
  return message.replace(/(cannot represent [^:]*value): [\s\S]*$/, '$1.');
}

/** True for an error no client should see the detail of (neither typed nor a GraphQL request error). */
export function isUnexpectedError(error: unknown): boolean {
  return describeError(error).kind === 'unexpected';
}
