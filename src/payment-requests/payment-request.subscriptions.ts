import { Resolver, Root, Subscription } from 'type-graphql';
import type { Context } from '../context.js';
import { userOf } from '../auth/authorization.js';
import type { EventHub } from '../events/event-hub.js';
import type { OutboxPayload, WalletEventType } from '../events/events.js';
import type { PaymentRequestStatus } from './payment-request.entity.js';
import { PaymentRequestNotification, PaymentRequestUpdate, PaymentRequestView } from './payment-request.types.js';

/** The view a wallet-app subscriber receives, rebuilt from an event's PaymentRequestStatus body (the state the event describes). */
export function subscriberViewOf(event: Pick<OutboxPayload, 'data'>): PaymentRequestView {
  const b = event.data.paymentRequest as Record<string, unknown>;
  return Object.assign(new PaymentRequestView(), {
    id: b.id as string,
    status: b.status as PaymentRequestStatus,
    amount: b.amount as number,
    currency: b.currency as string,
    description: b.description as string,
    merchantName: b.merchantName as string,
    createdAt: new Date(b.createdAt as string),
    expiresAt: new Date(b.expiresAt as string),
    updatedAt: new Date(b.updatedAt as string),
    transactionId: (b.transactionId as string | null) ?? null,
    reference: (b.reference as string | null) ?? null,
    metadata: (b.metadata as Record<string, string> | null) ?? null,
    consentReceipt: (b.consentReceipt as string | null | undefined) ?? null,
    paymentUrl: b.paymentUrl as string,
  });
}

/**
 * The wallet app's subscriptions (graphql-ws), fed from the outbox through this instance's event
 * hub: each payload is the state the event describes. The topic is the authenticated user's id
 * from the context; there is no argument through which one user could listen to another.
 */
@Resolver()
export class PaymentRequestSubscriptions {
  constructor(private readonly events: EventHub) {}

  /** The events of the caller's topic. */
  stream(topic: WalletEventType, ctx: Context): AsyncIterableIterator<OutboxPayload> {
    return this.events.subscribe(topic, userOf(ctx).userId);
  }

  @Subscription(() => PaymentRequestNotification, {
    description: 'Wallet app (user token): each payment request created for my wallet.',
    subscribe: ({ context }) => own(context as Context).stream('paymentRequested', context as Context),
  })
  paymentRequested(@Root() event: OutboxPayload): PaymentRequestNotification {
    return subscriberViewOf(event);
  }

  @Subscription(() => PaymentRequestUpdate, {
    description: 'Wallet app (user token): every status change of my payment requests.',
    subscribe: ({ context }) => own(context as Context).stream('paymentRequestUpdated', context as Context),
  })
  paymentRequestUpdated(@Root() event: OutboxPayload): PaymentRequestUpdate {
    return subscriberViewOf(event);
  }
}

/** This gateway's instance (a subscription's `subscribe` is static in type-graphql: it finds the instance through the context's container). */
const own = (ctx: Context): PaymentRequestSubscriptions => ctx.container.get(PaymentRequestSubscriptions) as PaymentRequestSubscriptions;
