import { GraphQLError, getNamedType, isListType, isNonNullType, isObjectType, type DocumentNode, type GraphQLField, type GraphQLOutputType, type GraphQLSchema } from 'graphql';
import { getComplexity, type ComplexityEstimatorArgs } from 'graphql-query-complexity';
import type { Config } from '../config.js';
import type { Principal } from '../auth/principal.js';

/** Objects a list counts for when its `first` / `limit` is not given (the resolvers' usual default page). */
export const DEFAULT_PAGE_SIZE = 50;
/** Objects a list without `first` or `limit` counts for (a transaction's refunds, a developer's keys). */
export const UNPAGED_LIST_SIZE = 10;

/** The credential types that have a cost limit of their own, and how the error names them. */
export type CostCredential = 'admin' | 'other';
const CREDENTIAL_NAMES: Record<CostCredential, string> = {
  admin: 'an operator or admin token',
  other: 'a secret key, a user token or no credential',
};

/** The cost limit of a caller: internal tools navigate the graph; secret keys and user tokens read a page at a time. */
export function costLimitOf(config: Pick<Config, 'graphqlMaxCost' | 'graphqlMaxCostAdmin'>, principal: Principal | undefined): { credential: CostCredential; limit: number } {
  return principal?.kind === 'admin' ? { credential: 'admin', limit: config.graphqlMaxCostAdmin } : { credential: 'other', limit: config.graphqlMaxCost };
}

const unwrap = (type: GraphQLOutputType): GraphQLOutputType => (isNonNullType(type) ? type.ofType : type);
const sizeArgument = (field: GraphQLField<unknown, unknown>): string | undefined => field.args.find((a) => a.name === 'first' || a.name === 'limit')?.name;

/**
 * The list-size-aware cost of an operation (GitHub's GraphQL API counts nodes the same way):
 * every field costs 1 for each object it is read on, and a list multiplies what is selected
 * inside it by how many objects it may return: `first` / `limit` of a paged field (its page's
 * list inside counts once more per item, not again per page), `DEFAULT_PAGE_SIZE` when omitted,
 * `UNPAGED_LIST_SIZE` for a list without either. Introspection (`__schema`, `__type`) costs 1.
 * Listing 5 wallets with 20 ledger entries and 20 payment requests each (3-4 scalars apiece)
 * costs 931.
 */
export function operationCost(schema: GraphQLSchema, document: DocumentNode, variables: Record<string, unknown> | undefined, operationName: string | undefined): number {
  // Types a paged field returns: their own list (nodes/data) is the page, already counted by `first`.
  const paged = new Set<string>();
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type)) continue;
    for (const field of Object.values(type.getFields())) if (sizeArgument(field)) paged.add(getNamedType(field.type).name);
  }
  const estimator = ({ field, type, args, childComplexity }: ComplexityEstimatorArgs): number => {
    if (field.name.startsWith('__') && field.name !== '__typename') return 1;
    const size = sizeArgument(field);
    if (size) {
      const n = typeof args[size] === 'number' && args[size] > 0 ? (args[size] as number) : DEFAULT_PAGE_SIZE;
      return 1 + n * childComplexity;
    }
    if (isListType(unwrap(field.type))) return (paged.has(type.name) ? 1 : UNPAGED_LIST_SIZE) * (1 + childComplexity);
    return 1 + childComplexity;
  };
  return getComplexity({ schema, query: document, variables: variables ?? {}, ...(operationName ? { operationName } : {}), estimators: [estimator] });
}

/**
 * The error refusing an operation over its caller's cost limit, or undefined when it is within
 * it. An operation whose variables do not fit is left to execution, which refuses it without
 * running anything.
 */
export function costError(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown> | undefined,
  operationName: string | undefined,
  limit: { credential: CostCredential; limit: number },
): GraphQLError | undefined {
  let cost: number;
  try {
    cost = operationCost(schema, document, variables, operationName);
  } catch (err) {
    if (err instanceof GraphQLError && /maximum allowed number of nodes/.test(err.message)) cost = Number.POSITIVE_INFINITY;
    else return undefined;
  }
  if (cost <= limit.limit) return undefined;
  const shown = Number.isFinite(cost) ? cost.toLocaleString('en-US') : 'too many fields to count';
  return new GraphQLError(
    `Query cost ${shown} exceeds the limit of ${limit.limit.toLocaleString('en-US')} for ${CREDENTIAL_NAMES[limit.credential]}. ` +
      `A field costs 1 for each object it is read on; a list counts as many objects as its first or limit asks ` +
      `(${DEFAULT_PAGE_SIZE} when omitted, ${UNPAGED_LIST_SIZE} for a list without one). Ask for smaller pages or fewer fields.`,
    { extensions: { code: 'COST_LIMIT_EXCEEDED', statusCode: 400, cost: Number.isFinite(cost) ? cost : null, limit: limit.limit } },
  );
}
