import type { GraphQLError, ValidationContext, ValidationRule } from 'graphql';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit';
import type { Config } from '../config.js';
import { rootFieldLimit } from './root-fields.js';

/** GraphQL depth, cost and root-field limits, shared by the HTTP and WebSocket doors. */
export function graphqlLimits(config: Config): ValidationRule[] {
  // Report, never throw: a rule that throws escapes graphql's validate(), which Apollo answers
  // with 500 and graphql-ws with closing the whole socket (4500).
  const report = { propagateOnRejection: false, onReject: [(ctx: ValidationContext | null, err: GraphQLError) => ctx?.reportError(err)] };
  return [
    maxDepthRule({ n: config.graphqlMaxDepth, exposeLimits: true, ...report }) as unknown as ValidationRule,
    costLimitRule({ maxCost: config.graphqlMaxCost, exposeLimits: true, ...report }) as unknown as ValidationRule,
    rootFieldLimit,
  ];
}
