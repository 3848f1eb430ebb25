import type { Services } from './services.js';
import { ResolverContainer } from './graphql/container.js';
import { PaymentRequestResolver } from './payment-requests/payment-request.resolver.js';
import { PaymentRequestSubscriptions } from './payment-requests/payment-request.subscriptions.js';
import { TransactionResolver } from './transactions/transaction.resolver.js';
import { AccountResolver } from './accounts/account.resolver.js';
import { AdminResolver } from './admin/admin.resolver.js';
import { DeveloperGraph, PaymentRequestGraph, TransactionGraph, UserGraph, WalletGraph } from './admin/graph.resolver.js';
import { OperatorResolver } from './operators/operator.resolver.js';
import { AuditResolver } from './audit/audit.resolver.js';
import { Audited, AuditedOnItsOwn } from './audit/audit.middleware.js';
import { DeveloperFeeGraph, PayoutGraph, PayoutRunResolver, SettlementAdminResolver, SettlementResolver } from './settlement/settlement.resolver.js';
import { EventResolver } from './events/event.resolver.js';
import { WebhookEndpointResolver } from './webhooks/webhook-endpoint.resolver.js';
import { ConsentAdminResolver, ConsentResolver } from './consent/consent.resolver.js';
import { PayerControlsResolver } from './payer-controls/payer-controls.resolver.js';
import { PasskeyResolver } from './consent/passkey.resolver.js';

/**
 * The GraphQL composition root: each resolver of one gateway made with the services it needs
 * (constructor injection; each dependency required by its type), for type-graphql's container.
 */
export function createResolvers(s: Services): ResolverContainer {
  return new ResolverContainer([
    new PaymentRequestResolver(s.payments),
    new PaymentRequestSubscriptions(s.eventHub),
    new TransactionResolver(s.transactions),
    new AccountResolver(s.accounts),
    new AdminResolver(s.accounts, s.developers, s.keys, s.payments, s.transactions, s.config),
    new PaymentRequestGraph(),
    new TransactionGraph(),
    new WalletGraph(),
    new DeveloperGraph(),
    new UserGraph(),
    new OperatorResolver(s.operators),
    new AuditResolver(s.audit),
    new Audited(s.audit),
    new EventResolver(s.eventLog),
    new WebhookEndpointResolver(s.webhookEndpoints),
    new ConsentResolver(s.consent),
    new ConsentAdminResolver(s.consent),
    new PayerControlsResolver(s.payerControls),
    new PasskeyResolver(s.passkeys, s.consent, s.eventHub),
    new SettlementResolver(s.settlement, s.payouts, s.config),
    new SettlementAdminResolver(s.settlement, s.payouts),
    new PayoutRunResolver(s.payouts),
    new DeveloperFeeGraph(s.settlement),
    new PayoutGraph(),
    new AuditedOnItsOwn(s.audit),
  ]);
}
