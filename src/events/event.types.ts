import { Field, ID, Int, ObjectType } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { EventPayload } from './events.js';
import type { AttemptRecord, DeliveryRecord, EventDetail, EventPage } from './event.service.js';

@ObjectType('Event', { description: 'A merchant event (SPEC §13): exactly the body a webhook delivers.' })
export class EventView {
  @Field(() => ID, { description: 'evt_...; the webhook-id header of its deliveries.' })
  id!: string;

  @Field(() => String, { description: 'payment_request.created|approved|rejected|cancelled|expired, transaction.refunded.' })
  type!: string;

  @Field(() => String, { description: 'ISO 8601 time the event was written.' })
  createdAt!: string;

  @Field(() => GraphQLJSONObject, {
    description: '{ paymentRequest: <PaymentRequestStatus body>, transaction?: <Transaction body> }, as delivered.',
  })
  data!: Record<string, unknown>;

  static from(p: EventPayload): EventView {
    return Object.assign(new EventView(), { id: p.id, type: p.type, createdAt: p.createdAt, data: p.data });
  }
}

@ObjectType('EventPage', { description: 'Events oldest first; pass nextAfter as after for the next page.' })
export class EventPageView {
  @Field(() => [EventView])
  data!: EventView[];

  @Field(() => Boolean)
  hasMore!: boolean;

  @Field(() => String, { nullable: true })
  nextAfter!: string | null;

  static from(page: EventPage): EventPageView {
    return Object.assign(new EventPageView(), { data: page.data.map(EventView.from), hasMore: page.hasMore, nextAfter: page.nextAfter });
  }
}

@ObjectType('WebhookDelivery', { description: 'The delivery of one event to one endpoint.' })
export class WebhookDeliveryView implements DeliveryRecord {
  @Field(() => ID) endpointId!: string;
  @Field(() => String, { description: 'PENDING, DELIVERED or FAILED (given up).' }) status!: DeliveryRecord['status'];
  @Field(() => Int) attempts!: number;
  @Field(() => Date, { nullable: true, description: 'When the next attempt is due (PENDING only).' }) nextAttemptAt!: Date | null;
  @Field(() => Date, { nullable: true }) deliveredAt!: Date | null;
  @Field(() => String, { nullable: true }) lastError!: string | null;
}

@ObjectType('WebhookAttempt', { description: 'One POST of an event to an endpoint.' })
export class WebhookAttemptView implements AttemptRecord {
  @Field(() => ID) endpointId!: string;
  @Field(() => Date) attemptedAt!: Date;
  @Field(() => Int, { nullable: true, description: 'The HTTP status answered, if any.' }) httpStatus!: number | null;
  @Field(() => String, { nullable: true, description: 'Why the attempt failed (HTTP status, timeout, connection error).' }) error!: string | null;
  @Field(() => Int) durationMs!: number;
}

@ObjectType('EventDetail', { description: 'An event with its webhook deliveries and their attempts.' })
export class EventDetailView extends EventView {
  @Field(() => [WebhookDeliveryView])
  deliveries!: WebhookDeliveryView[];

  @Field(() => [WebhookAttemptView])
  attempts!: WebhookAttemptView[];

  static fromDetail(d: EventDetail): EventDetailView {
    return Object.assign(new EventDetailView(), EventView.from(d.event), {
      deliveries: d.deliveries.map((x) => Object.assign(new WebhookDeliveryView(), x)),
      attempts: d.attempts.map((x) => Object.assign(new WebhookAttemptView(), x)),
    });
  }
}
