import { Field, ID, InputType, ObjectType, registerEnumType } from 'type-graphql';
import type { WebhookEndpointRecord } from './webhook-endpoint.service.js';

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

  static from(r: WebhookEndpointRecord): WebhookEndpointView {
    return Object.assign(new WebhookEndpointView(), {
      id: r.id,
      url: r.url,
      events: r.events,
      status: r.status as WebhookEndpointStatusEnum,
      disabledReason: r.disabledReason,
      createdAt: r.createdAt,
    });
  }
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
