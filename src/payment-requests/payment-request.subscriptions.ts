import { Resolver, Root, Subscription } from 'type-graphql';
import type { Context } from '../context.js';
import { userOf } from '../auth/authorization.js';
import type { PaymentRequestView } from './payment-request.types.js';
import { PaymentRequestNotification, PaymentRequestUpdate } from './payment-request.types.js';

/**
 * The wallet app's subscriptions (graphql-ws), fed from the outbox: each payload is the state
 * the event describes. The topic is the authenticated user's id from the
 * context; there is no argument through which one user could listen to another.
 */
@Resolver()
export class PaymentRequestSubscriptions {
  @Subscription(() => PaymentRequestNotification, {
    description: 'Wallet app (user token): each payment request created for my wallet.',
    subscribe: ({ context }) => {
      const ctx = context as Context;
      return ctx.services.eventHub.subscribe('paymentRequested', userOf(ctx).userId);
    },
  })
  paymentRequested(@Root() pr: PaymentRequestView): PaymentRequestNotification {
    return pr;
  }

  @Subscription(() => PaymentRequestUpdate, {
    description: 'Wallet app (user token): every status change of my payment requests.',
    subscribe: ({ context }) => {
      const ctx = context as Context;
      return ctx.services.eventHub.subscribe('paymentRequestUpdated', userOf(ctx).userId);
    },
  })
  paymentRequestUpdated(@Root() pr: PaymentRequestView): PaymentRequestUpdate {
    return pr;
  }
}
