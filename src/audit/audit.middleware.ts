import type { MiddlewareInterface, NextFn, ResolverData } from 'type-graphql';
import type { Context } from '../context.js';
import { describeError } from '../errors.js';
import type { AuditService } from './audit.service.js';

/**
 * Audits admin mutations (`@UseMiddleware(Audited)` on a resolver class; queries and nested
 * fields pass through untouched). The operation runs inside one database transaction that this
 * middleware opens on the operation's unit of work: the services' own transactions on it run
 * inside that one, and the 'ok' row is inserted in it, so the change and its audit row commit
 * together or not at all. On failure everything is rolled back and the failure row (outcome =
 * the error code the caller sees) is written on its own. Runs after `@Authorized`, so refused
 * callers leave no row.
 */
export class Audited implements MiddlewareInterface<Context> {
  constructor(private readonly audit: AuditService) {}

  async use({ context: ctx, info, args }: ResolverData<Context>, next: NextFn): Promise<unknown> {
    if (info.parentType !== info.schema.getMutationType() || ctx.principal.kind !== 'admin') return next();
    const entry = { operator: ctx.principal.operator, operation: info.fieldName, args, requestId: ctx.requestId };
    try {
      return await ctx.work.transaction(async (tx) => {
        const result: unknown = await next();
        await this.audit.record(tx, { ...entry, outcome: 'ok' });
        return result;
      });
    } catch (err) {
      await this.audit.record(ctx.work, { ...entry, outcome: describeError(err).code }).catch((auditErr: unknown) => {
        ctx.log.error({ err: { message: (auditErr as Error).message }, operation: entry.operation }, 'audit row of a failed operation not written');
      });
      throw err;
    }
  }
}
