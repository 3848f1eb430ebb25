import { Field, ID, InputType, Int, ObjectType, registerEnumType } from 'type-graphql';
import type { WebhookEndpointRecord, WebhookTestResult } from './webhook-endpoint.service.js';

export enum WebhookEndpointStatusEnum {
  ENABLED = 'ENABLED',
  DISABLED = 'DISABLED',
  DELETED = 'DELETED',
}
registerEnumType(WebhookEndpointStatusEnum, {
  name: 'WebhookEndpointStatus',
  description: 'ENABLED receives events; DISABLED failed for too long (see disabledReason); DELETED by its developer.',
});

@ObjectType('WebhookEndpoint', { description: 'Where a developer receives signed events (Standard Webhooks).' })
export class WebhookEndpointView {
  @Field(() => ID) id!: string;
  @Field(() => String) url!: string;
  @Field(() => [String], { description: 'The event types sent to it.' }) events!: string[];
  @Field(() => WebhookEndpointStatusEnum) status!: WebhookEndpointStatusEnum;
  @Field(() => String, { nullable: true, description: 'Why it was disabled.' }) disabledReason!: string | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date, { nullable: true, description: 'When the last delivery attempt was made (test sends are not deliveries).' })
  lastDeliveryAt!: Date | null;
  @Field(() => Int, { nullable: true, description: "That attempt's HTTP status; null when it got no answer, or none was made." })
  lastDeliveryStatus!: number | null;
  @Field(() => Int, { description: 'Deliveries still to be made (they wait while the endpoint is DISABLED).' })
  pendingDeliveries!: number;

  static from(r: WebhookEndpointRecord): WebhookEndpointView {
    return Object.assign(new WebhookEndpointView(), {
      id: r.id,
      url: r.url,
      events: r.events,
      status: r.status as WebhookEndpointStatusEnum,
      disabledReason: r.disabledReason,
      createdAt: r.createdAt,
      lastDeliveryAt: r.lastDeliveryAt,
      lastDeliveryStatus: r.lastDeliveryStatus,
      pendingDeliveries: r.pendingDeliveries,
    });
  }
}

@ObjectType('WebhookTestResult', { description: 'What the receiver said to a signed webhook.test event (POST /webhook-endpoints/{id}/test).' })
export class WebhookTestResultView implements WebhookTestResult {
  @Field(() => Boolean, { description: 'The receiver answered 2xx.' }) delivered!: boolean;
  @Field(() => Int, { nullable: true, description: "The receiver's HTTP status; null when no answer arrived." }) status!: number | null;
  @Field(() => Int) durationMs!: number;
  @Field(() => String, { nullable: true, description: "The start of the receiver's answer (at most 1 KiB)." }) body!: string | null;
  @Field(() => String, { nullable: true, description: 'Why no answer arrived (timeout, connection error, address not allowed).' }) error!: string | null;
}

@ObjectType('WebhookEndpointWithSecret', { description: 'An endpoint right after creation or rotation, with its signing secret (shown once).' })
export class WebhookEndpointWithSecretView extends WebhookEndpointView {
  @Field(() => String, { description: 'whsec_...: verify webhook-signature with it. Not shown again.' })
  secret!: string;

  static withSecret(r: WebhookEndpointRecord): WebhookEndpointWithSecretView {
    return Object.assign(new WebhookEndpointWithSecretView(), WebhookEndpointView.from(r), { secret: r.secret });
  }
}

@ObjectType('WebhookEndpointList')
export class WebhookEndpointListView {
  @Field(() => [WebhookEndpointView]) data!: WebhookEndpointView[];
}

@InputType('CreateWebhookEndpointInput', { description: 'POST /api/v1/webhook-endpoints.' })
export class CreateWebhookEndpointInput {
  @Field(() => String, { description: 'https URL (http allowed in development) that receives the POSTs.' })
  url!: string;

  @Field(() => [String], { nullable: true, description: 'Event types to send; omitted = all.' })
  events?: string[] | null;
}
