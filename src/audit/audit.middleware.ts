import type { MiddlewareFn } from 'type-graphql';
import type { Context } from '../context.js';
import { describeError } from '../errors.js';

/**
 * Audits admin mutations (`@UseMiddleware(Audited)` on a resolver class; queries and nested
 * fields pass through untouched). The operation runs inside one database transaction opened on
 * `ctx.em`: the services' own `em.transactional(...)` on it become savepoints of that
 * transaction (MikroORM's default NESTED propagation), and the 'ok' row is inserted in it, so the
 * change and its audit row commit together or not at all. On failure the transaction is rolled
 * back and the failure row (outcome = the error code the caller sees) is written on its own.
 * Runs after `@Authorized`, so refused callers leave no row.
 */
export const Audited: MiddlewareFn<Context> = async ({ context: ctx, info, args }, next) => {
  if (info.parentType !== info.schema.getMutationType() || ctx.principal.kind !== 'admin') return next();
  const { em } = ctx;
  const entry = { operator: ctx.principal.operator, operation: info.fieldName, args, requestId: ctx.requestId };
  await em.begin();
  try {
    const result: unknown = await next();
    await em.flush();
    await ctx.services.audit.record(em, { ...entry, outcome: 'ok' });
    await em.commit();
    return result;
  } catch (err) {
    if (em.isInTransaction()) {
      await em.rollback().catch((rollbackErr: unknown) => {
        ctx.log.warn({ err: { message: (rollbackErr as Error).message } }, 'audited operation: rollback failed');
        em.resetTransactionContext();
      });
    }
    await ctx.services.audit.record(em, { ...entry, outcome: describeError(err).code }).catch((auditErr: unknown) => {
      ctx.log.error({ err: { message: (auditErr as Error).message }, operation: entry.operation }, 'audit row of a failed operation not written');
    });
    throw err;
  }
};

/**
 * Audits an admin mutation that runs transactions of its own (`runPayouts`: one per payout, as the
 * schedule does, so that no payout waits for the others to commit): it runs outside any audit
 * transaction, and its row is written after it with the outcome the caller sees (the rows of
 * what it made carry their own history: the payouts and their events).
 */
export const AuditedOnItsOwn: MiddlewareFn<Context> = async ({ context: ctx, info, args }, next) => {
  if (info.parentType !== info.schema.getMutationType() || ctx.principal.kind !== 'admin') return next();
  const entry = { operator: ctx.principal.operator, operation: info.fieldName, args, requestId: ctx.requestId };
  let result: unknown;
  try {
    result = await next();
  } catch (err) {
    await ctx.services.audit.record(ctx.em, { ...entry, outcome: describeError(err).code }).catch((auditErr: unknown) => {
      ctx.log.error({ err: { message: (auditErr as Error).message }, operation: entry.operation }, 'audit row of a failed operation not written');
    });
    throw err;
  }
  await ctx.services.audit.record(ctx.em, { ...entry, outcome: 'ok' });
  return result;
};
