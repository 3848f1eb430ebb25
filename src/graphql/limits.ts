import type { GraphQLError, ValidationContext, ValidationRule } from 'graphql';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import type { Config } from '../config.js';
import { rootFieldLimit } from './root-fields.js';

/**
 * GraphQL depth and root-field limits, shared by the HTTP and WebSocket doors. The cost limit
 * depends on the caller's credential and the operation's variables, so each door checks it after
 * validation (src/graphql/cost.ts).
 */
export function graphqlLimits(config: Config): ValidationRule[] {
  // Report, never throw: a rule that throws escapes graphql's validate(), which Apollo answers
  // with 500 and graphql-ws with closing the whole socket (4500).
  const report = { propagateOnRejection: false, onReject: [(ctx: ValidationContext | null, err: GraphQLError) => ctx?.reportError(err)] };
  return [
    maxDepthRule({ n: config.graphqlMaxDepth, exposeLimits: true, ...report }) as unknown as ValidationRule,
    rootFieldLimit,
  ];
}
