import { Arg, Authorized, Ctx, ID, Int, Mutation, Query, Resolver, UseMiddleware } from 'type-graphql';
import type { Context } from '../context.js';
import type { OperatorService } from './operator.service.js';
import { Role } from '../auth/authorization.js';
import type { Page } from '../db/pagination.js';
import { Audited } from '../audit/audit.middleware.js';
import { CurrentOperator, IssuedOperator, OperatorConnection, OperatorView, RevokedOperator } from './operator.types.js';

/** Internal tools: operator identities (admin credentials with a name, revocable). */
@Authorized(Role.ADMIN)
@UseMiddleware(Audited)
@Resolver()
export class OperatorResolver {
  constructor(
    private readonly operatorService: OperatorService,
  ) {}

  @Mutation(() => IssuedOperator, { description: 'Creates an operator; its token is in this answer only.' })
  async createOperator(@Arg('name', () => String) name: string, @Ctx() ctx: Context): Promise<IssuedOperator> {
    const issued = await this.operatorService.create(ctx.work, name);
    return Object.assign(new IssuedOperator(), { operatorId: issued.operatorId, name: issued.name, token: issued.token });
  }

  @Mutation(() => RevokedOperator, { description: "Revokes an operator's token; every instance refuses it within 5 seconds." })
  async revokeOperator(@Arg('id', () => ID) id: string, @Ctx() ctx: Context): Promise<RevokedOperator> {
    return Object.assign(new RevokedOperator(), await this.operatorService.revoke(ctx.work, id));
  }

  @Query(() => OperatorConnection, { description: 'Newest first, revoked ones included; never their tokens.' })
  async operators(
    @Ctx() ctx: Context,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<OperatorView>> {
    const page = await this.operatorService.list(ctx.work.em, first, after);
    return { nodes: page.nodes.map(OperatorView.from), nextCursor: page.nextCursor };
  }

  @Query(() => CurrentOperator, { description: 'Who this admin call runs as.' })
  currentOperator(@Ctx() ctx: Context): CurrentOperator {
    const { operator } = ctx.principal as Extract<Context['principal'], { kind: 'admin' }>;
    return Object.assign(new CurrentOperator(), { operatorId: operator.id, id: operator.id, name: operator.name });
  }
}
