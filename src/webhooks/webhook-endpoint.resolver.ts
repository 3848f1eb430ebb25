import { Arg, Authorized, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { Context } from '../context.js';
import type { WebhookEndpointService } from './webhook-endpoint.service.js';
import { CurrentDeveloper, Role } from '../auth/authorization.js';
import type { DeveloperPrincipal as Developer } from '../auth/principal.js';
import {
  CreateWebhookEndpointInput,
  WebhookEndpointListView,
  WebhookEndpointView,
  WebhookEndpointWithSecretView,
  WebhookTestResultView,
} from './webhook-endpoint.types.js';

/** A developer's webhook endpoints. */
@Resolver()
export class WebhookEndpointResolver {
  constructor(
    private readonly endpoints: WebhookEndpointService,
  ) {}

  @Authorized(Role.DEVELOPER)
  @Mutation(() => WebhookEndpointWithSecretView, { description: 'Developer (secret key): register an endpoint. REST: POST /api/v1/webhook-endpoints.' })
  async createWebhookEndpoint(
    @Arg('input', () => CreateWebhookEndpointInput) input: CreateWebhookEndpointInput,
    @Ctx() ctx: Context,
    @CurrentDeveloper() dev: Developer,
  ): Promise<WebhookEndpointWithSecretView> {
    return WebhookEndpointWithSecretView.withSecret(await this.endpoints.create(ctx.work, dev.developerId, input));
  }

  @Authorized(Role.DEVELOPER)
  @Query(() => WebhookEndpointListView, { description: 'Developer (secret key): my endpoints. REST: GET /api/v1/webhook-endpoints.' })
  async webhookEndpoints(@Ctx() ctx: Context, @CurrentDeveloper() dev: Developer): Promise<WebhookEndpointListView> {
    const list = await this.endpoints.list(ctx.work, dev.developerId);
    return Object.assign(new WebhookEndpointListView(), { data: list.map(WebhookEndpointView.from) });
  }

  @Authorized(Role.DEVELOPER)
  @Mutation(() => WebhookEndpointView, { description: 'Developer (secret key): delete an endpoint. REST: DELETE /api/v1/webhook-endpoints/{id}.' })
  async deleteWebhookEndpoint(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentDeveloper() dev: Developer): Promise<WebhookEndpointView> {
    return WebhookEndpointView.from(await this.endpoints.delete(ctx.work, dev.developerId, id));
  }

  @Authorized(Role.DEVELOPER)
  @Mutation(() => WebhookEndpointWithSecretView, {
    description: 'Developer (secret key): new signing secret; the old one keeps signing for 24 h. REST: POST /api/v1/webhook-endpoints/{id}/rotate-secret.',
  })
  async rotateWebhookEndpointSecret(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: Context,
    @CurrentDeveloper() dev: Developer,
  ): Promise<WebhookEndpointWithSecretView> {
    return WebhookEndpointWithSecretView.withSecret(await this.endpoints.rotateSecret(ctx.work, dev.developerId, id));
  }

  @Authorized(Role.DEVELOPER)
  @Mutation(() => WebhookEndpointView, {
    description:
      'Developer (secret key): enable a DISABLED endpoint again; its pending deliveries resume, given-up ones stay failed (resend them). REST: POST /api/v1/webhook-endpoints/{id}/enable.',
  })
  async enableWebhookEndpoint(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentDeveloper() dev: Developer): Promise<WebhookEndpointView> {
    const endpoint = await this.endpoints.enable(ctx.work, dev.developerId, id);
    return WebhookEndpointView.from(endpoint);
  }

  @Authorized(Role.DEVELOPER)
  @Mutation(() => WebhookTestResultView, {
    description:
      'Developer (secret key): send a signed webhook.test event to an endpoint now and see its answer (not stored as an event). REST: POST /api/v1/webhook-endpoints/{id}/test.',
  })
  async testWebhookEndpoint(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentDeveloper() dev: Developer): Promise<WebhookTestResultView> {
    return Object.assign(new WebhookTestResultView(), await this.endpoints.sendTest(ctx.work, dev.developerId, id));
  }
}
