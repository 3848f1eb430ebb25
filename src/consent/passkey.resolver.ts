import { Arg, Authorized, Ctx, ID, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { Context } from '../context.js';
import type { PasskeyService } from './passkey.service.js';
import type { ConsentService } from './consent.service.js';
import { requirePin } from './pin.js';
import { requireUuid } from '../uuid.js';
import { CurrentUser, Role, userOf } from '../auth/authorization.js';
import type { UserPrincipal as User } from '../auth/principal.js';
import { PasskeyNotice, PasskeyView } from './passkey.types.js';
import type { EventHub } from '../events/event-hub.js';
import type { OutboxPayload } from '../events/events.js';

/**
 * The wallet app's passkeys (user token): enrolment, listing, removal and approval challenges.
 * Enrolment and removal change how the wallet approves, so both need the PIN first (SPEC §16).
 */
@Resolver()
export class PasskeyResolver {
  constructor(
    private readonly passkeys: PasskeyService,
    private readonly consent: ConsentService,
    private readonly events: EventHub,
  ) {}

  @Authorized(Role.USER)
  @Query(() => [PasskeyView], { description: 'Wallet app (user token): my passkeys, oldest first.' })
  async myPasskeys(@Ctx() ctx: Context, @CurrentUser() me: User): Promise<PasskeyView[]> {
    return (await this.passkeys.list(ctx.work.em, me.userId)).map((p) => PasskeyView.from(p));
  }

  @Authorized(Role.USER)
  @Mutation(() => GraphQLJSONObject, {
    description:
      'Wallet app (user token): WebAuthn creation options for navigator.credentials.create (JSON, base64url fields), with a single-use challenge valid for 5 minutes, issued only after my transaction PIN verified (counted toward the lock like an approval: VERIFICATION_FAILED / VERIFICATION_LOCKED). registerPasskey accepts only a challenge issued here.',
  })
  async passkeyRegistrationOptions(
    @Arg('pin', () => String, { description: 'My transaction PIN (4 to 6 digits).' }) pin: string,
    @Ctx() ctx: Context,
    @CurrentUser() me: User,
  ): Promise<Record<string, unknown>> {
    await this.consent.confirmOwner(ctx.work.em, me.userId, requirePin(pin));
    return this.passkeys.registrationOptions(ctx.work.em, me.userId);
  }

  @Authorized(Role.USER)
  @Mutation(() => PasskeyView, {
    description: "Wallet app (user token): register the credential navigator.credentials.create answered with (its JSON form), over a challenge from passkeyRegistrationOptions.",
  })
  async registerPasskey(
    @Arg('response', () => GraphQLJSONObject) response: Record<string, unknown>,
    @Ctx() ctx: Context,
    @CurrentUser() me: User,
    @Arg('name', () => String, { nullable: true, description: 'At most 64 characters; default "Passkey".' }) name?: string | null,
  ): Promise<PasskeyView> {
    return PasskeyView.from(await this.passkeys.register(ctx.work, me.userId, response, name));
  }

  @Authorized(Role.USER)
  @Mutation(() => Boolean, {
    description:
      'Wallet app (user token): remove one of my passkeys, after my transaction PIN verified (counted toward the lock like an approval: VERIFICATION_FAILED / VERIFICATION_LOCKED).',
  })
  async removePasskey(
    @Arg('id', () => ID) id: string,
    @Arg('pin', () => String, { description: 'My transaction PIN (4 to 6 digits).' }) pin: string,
    @Ctx() ctx: Context,
    @CurrentUser() me: User,
  ): Promise<boolean> {
    requireUuid(id);
    await this.consent.confirmOwner(ctx.work.em, me.userId, requirePin(pin));
    return this.passkeys.remove(ctx.work, me.userId, id);
  }

  @Authorized(Role.USER)
  @Mutation(() => GraphQLJSONObject, {
    description:
      'Wallet app (user token): WebAuthn request options for navigator.credentials.get that approve one of my PENDING requests: allowCredentials lists my passkeys (empty when none), user verification is required, and the single-use challenge commits to the request\'s id, amount, currency and merchant name. Answer with approvePaymentRequest(id, verification: { passkey }).',
  })
  async approvalChallenge(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentUser() me: User): Promise<Record<string, unknown>> {
    return this.passkeys.approvalChallenge(ctx.work, me.userId, id);
  }

  /** The caller's passkey notices (the topic is the authenticated user's id, never an argument). */
  stream(ctx: Context): AsyncIterableIterator<OutboxPayload> {
    return this.events.subscribe('passkeyChanged', userOf(ctx).userId);
  }

  @Subscription(() => PasskeyNotice, {
    description:
      'Wallet app (user token): each passkey added to or removed from my wallet, on whatever device or instance it happened, so that a change I did not make shows at once.',
    subscribe: ({ context }) => ((context as Context).container.get(PasskeyResolver) as PasskeyResolver).stream(context as Context),
  })
  passkeyChanged(@Root() event: OutboxPayload): PasskeyNotice {
    return PasskeyNotice.of(event);
  }
}
