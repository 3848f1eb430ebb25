import { Arg, Authorized, Ctx, Mutation, Resolver, UseMiddleware } from 'type-graphql';
import type { Context } from '../context.js';
import type { ConsentService } from './consent.service.js';
import { CurrentUser, Role } from '../auth/authorization.js';
import type { UserPrincipal as User } from '../auth/principal.js';
import { Audited } from '../audit/audit.middleware.js';
import { TransactionPinReset } from './consent.types.js';

/** The wallet app's side of consent (user token). */
@Resolver()
export class ConsentResolver {
  constructor(
    private readonly consent: ConsentService,
  ) {}

  @Authorized(Role.USER)
  @Mutation(() => Boolean, {
    description:
      'Wallet app (user token): change my transaction PIN. The current PIN is checked like an approval (counted; VERIFICATION_FAILED / VERIFICATION_LOCKED); the new one must be 4 to 6 digits and not easy to guess (BAD_USER_INPUT, nothing counted).',
  })
  async changeTransactionPin(
    @Arg('currentPin', () => String) currentPin: string,
    @Arg('newPin', () => String) newPin: string,
    @Ctx() ctx: Context,
    @CurrentUser() user: User,
  ): Promise<boolean> {
    return this.consent.changePin(ctx.work.em, user.userId, currentPin, newPin);
  }
}

/** Internal tools (admin token): transaction PINs and their locks, audited. */
@Authorized(Role.ADMIN)
@UseMiddleware(Audited)
@Resolver()
export class ConsentAdminResolver {
  constructor(
    private readonly consent: ConsentService,
  ) {}

  @Mutation(() => TransactionPinReset, {
    description: "Sets a wallet's transaction PIN (a random 6-digit one when `pin` is omitted), lifts any lock, and shows the PIN this once.",
  })
  async resetTransactionPin(
    @Arg('walletId', () => String) walletId: string,
    @Ctx() ctx: Context,
    @Arg('pin', () => String, { nullable: true, description: '4 to 6 digits, not easy to guess (a repeated digit, a run, a very common PIN).' }) pin?: string | null,
  ): Promise<TransactionPinReset> {
    return Object.assign(new TransactionPinReset(), { walletId, pin: await this.consent.setPin(ctx.work, walletId, pin) });
  }

  @Mutation(() => Boolean, {
    description: "Lifts the lock on a wallet's approvals (after PIN_MAX_ATTEMPTS failed verifications; after PIN_MAX_LOCKS locks with no success between them only this lifts it) and clears its counts.",
  })
  async unlockTransactionPin(@Arg('walletId', () => String) walletId: string, @Ctx() ctx: Context): Promise<boolean> {
    return this.consent.unlock(ctx.work, walletId);
  }
}
