import { GraphQLError, Kind, type ASTVisitor, type SelectionSetNode, type ValidationContext, type ValidationRule } from 'graphql';
import type { MiddlewareFn } from 'type-graphql';
import type { Context } from '../context.js';

/** Root fields (aliases counted, fragments expanded) one operation may select; each one is database work. */
export const MAX_ROOT_FIELDS = 10;
/** Root fields of one operation that may hold a database connection at the same time. */
export const MAX_CONCURRENT_ROOT_FIELDS = 2;

/** Counts the root fields of a selection set, following fragment spreads and inline fragments (not `__typename`). */
function countRootFields(context: ValidationContext, set: SelectionSetNode, seen = new Set<string>()): number {
  let n = 0;
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD) {
      if (s.name.value !== '__typename') n++;
    } else if (s.kind === Kind.INLINE_FRAGMENT) {
      n += countRootFields(context, s.selectionSet, seen);
    } else if (!seen.has(s.name.value)) {
      seen.add(s.name.value); // a fragment spread twice selects its fields once; cycles are GraphQL's own error
      const fragment = context.getFragment(s.name.value);
      if (fragment) n += countRootFields(context, fragment.selectionSet, seen);
    }
  }
  return n;
}

/**
 * At most MAX_ROOT_FIELDS root fields per operation: 1,000 aliases of one cheap-looking field
 * are 1,000 database reads, whatever the cost estimate says.
 */
export const rootFieldLimit: ValidationRule = (context: ValidationContext): ASTVisitor => ({
  OperationDefinition(node) {
    const n = countRootFields(context, node.selectionSet);
    if (n > MAX_ROOT_FIELDS) {
      context.reportError(
        new GraphQLError(`Operation selects ${n} root fields; at most ${MAX_ROOT_FIELDS} are allowed`, {
          nodes: [node],
          extensions: { code: 'BAD_USER_INPUT', statusCode: 400 },
        }),
      );
    }
  },
});

/** A counting semaphore: at most `size` holders, the others queue in order. */
class Gate {
  private held = 0;
  private readonly waiting: Array<() => void> = [];
  /** Root fields of the operation seen so far (the first is counted by createContext). */
  fields = 0;

  constructor(private readonly size: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.held >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.held++;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.held--;
    }
  }
}

const gates = new WeakMap<object, Gate>();

/**
 * Global resolver middleware for root fields of queries and mutations: each root field beyond the
 * first counts one more request against the caller's rate limit (a secret key's 600 aliased reads
 * are 600 requests), and at most MAX_CONCURRENT_ROOT_FIELDS of one operation run at once, so one
 * document cannot take the whole connection pool.
 */
export const rootFieldGate: MiddlewareFn<Context> = async ({ context, info }, next) => {
  if (info.path.prev !== undefined || info.operation.operation === 'subscription') return next();
  let gate = gates.get(context);
  if (!gate) {
    gate = new Gate(MAX_CONCURRENT_ROOT_FIELDS);
    gates.set(context, gate);
  }
  if (gate.fields++ > 0) await context.limits.request();
  return gate.run(() => Promise.resolve(next()));
};
