import { Arg, Authorized, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { Context } from '../context.js';
import type { EventService } from './event.service.js';
import { CurrentDeveloper, Role } from '../auth/authorization.js';
import type { DeveloperPrincipal as Developer } from '../auth/principal.js';
import { EventDetailView, EventPageView } from './event.types.js';

/** The events API (pull): a developer's own events, their deliveries, and resending. */
@Resolver()
export class EventResolver {
  constructor(
    private readonly eventLog: EventService,
  ) {}

  @Authorized(Role.DEVELOPER)
  @Query(() => EventPageView, {
    description: 'Developer (secret key): my events, oldest first. REST: GET /api/v1/events?after=&limit=&type=&paymentRequestId=.',
  })
  async events(
    @Ctx() ctx: Context,
    @CurrentDeveloper() dev: Developer,
    @Arg('after', () => String, { nullable: true, description: 'The id of the last event already read.' }) after?: string | null,
    @Arg('limit', () => Int, { nullable: true, description: '1-100, default 50.' }) limit?: number | null,
    @Arg('type', () => [String], { nullable: true, description: 'Only events of these types.' }) type?: string[] | null,
    @Arg('paymentRequestId', () => ID, { nullable: true, description: 'Only the events of this payment request.' })
    paymentRequestId?: string | null,
  ): Promise<EventPageView> {
    return EventPageView.from(await this.eventLog.list(ctx.work, dev.developerId, after, limit, { types: type, paymentRequestId }));
  }

  @Authorized(Role.DEVELOPER)
  @Query(() => EventDetailView, { description: 'Developer (secret key): one event with its deliveries. REST: GET /api/v1/events/{id}.' })
  async event(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentDeveloper() dev: Developer): Promise<EventDetailView> {
    return EventDetailView.fromDetail(await this.eventLog.get(ctx.work, dev.developerId, id));
  }

  @Authorized(Role.DEVELOPER)
  @Mutation(() => EventDetailView, {
    description: 'Developer (secret key): send an event again to my enabled endpoints. REST: POST /api/v1/events/{id}/resend.',
  })
  async resendEvent(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentDeveloper() dev: Developer): Promise<EventDetailView> {
    const detail = await this.eventLog.resend(ctx.work, dev.developerId, id);
    return EventDetailView.fromDetail(detail);
  }
}
