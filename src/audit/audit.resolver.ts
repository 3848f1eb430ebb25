import { Arg, Authorized, Ctx, Int, Query, Resolver } from 'type-graphql';
import type { Context } from '../context.js';
import type { AuditService } from './audit.service.js';
import { Role } from '../auth/authorization.js';
import type { Page } from '../db/pagination.js';
import { AuditEntryConnection, AuditEntryView, AuditLogFilter } from './audit.types.js';

/** Internal tools: reading the audit log (there is no way to change it). */
@Authorized(Role.ADMIN)
@Resolver()
export class AuditResolver {
  constructor(
    private readonly audit: AuditService,
  ) {}

  @Query(() => AuditEntryConnection, { description: 'Newest first; `first` 1-200 (50 when omitted).' })
  async auditLog(
    @Ctx() ctx: Context,
    @Arg('filter', () => AuditLogFilter, { nullable: true }) filter?: AuditLogFilter,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<AuditEntryView>> {
    const page = await this.audit.list(ctx.work.em, filter ?? {}, first, after);
    return { nodes: page.nodes.map(AuditEntryView.from), nextCursor: page.nextCursor };
  }
}
