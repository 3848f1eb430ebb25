import 'reflect-metadata';
import { buildSchema } from 'type-graphql';
import type { GraphQLSchema } from 'graphql';
import { PaymentRequestResolver } from './payment-requests/payment-request.resolver.js';
import { TransactionResolver } from './transactions/transaction.resolver.js';
import { AccountResolver } from './accounts/account.resolver.js';
import { AdminResolver } from './admin/admin.resolver.js';
import { DeveloperGraph, PaymentRequestGraph, TransactionGraph, UserGraph, WalletGraph } from './admin/graph.resolver.js';
import { OperatorResolver } from './operators/operator.resolver.js';
import { AuditResolver } from './audit/audit.resolver.js';
import { PaymentRequestSubscriptions } from './payment-requests/payment-request.subscriptions.js';
import { createPubSub } from '@graphql-yoga/subscription';
import { authChecker } from './auth/authorization.js';
import { rootFieldGate } from './graphql/root-fields.js';
import { refuseNulArguments } from './graphql/text-arguments.js';
import { EventResolver } from './events/event.resolver.js';
import { WebhookEndpointResolver } from './webhooks/webhook-endpoint.resolver.js';
import { PasskeyResolver } from './consent/passkey.resolver.js';
import { PayerControlsResolver } from './payer-controls/payer-controls.resolver.js';
import { tracing } from './observability/tracing.js';
import { traceResolvers } from './observability/resolver-spans.js';
import { ConsentAdminResolver, ConsentResolver } from './consent/consent.resolver.js';
import { Audited } from './audit/audit.middleware.js';
import { containerOf } from './graphql/container.js';

/** Every resolver class of the schema, and every class middleware they use: each gateway makes one instance of each (src/resolvers.ts). */
export const RESOLVERS = [
  PaymentRequestResolver,
  PaymentRequestSubscriptions,
  TransactionResolver,
  AccountResolver,
  AdminResolver,
  PaymentRequestGraph,
  TransactionGraph,
  WalletGraph,
  DeveloperGraph,
  UserGraph,
  OperatorResolver,
  AuditResolver,
  EventResolver,
  WebhookEndpointResolver,
  ConsentResolver,
  ConsentAdminResolver,
  PayerControlsResolver,
  PasskeyResolver,
  Audited,
] as const;

let built: Promise<GraphQLSchema> | undefined;

/**
 * The one GraphQL schema; built once per process (type-graphql metadata is global). Its resolver
 * instances are each gateway's own: type-graphql takes them from the operation's context
 * (`containerOf`), so several gateways in one process (the tests) share the schema, not services.
 */
export function getSchema(): Promise<GraphQLSchema> {
  built ??= buildSchema({
    resolvers: [
      PaymentRequestResolver,
      PaymentRequestSubscriptions,
      TransactionResolver,
      AccountResolver,
      AdminResolver,
      PaymentRequestGraph,
      TransactionGraph,
      WalletGraph,
      DeveloperGraph,
      UserGraph,
      OperatorResolver,
      AuditResolver,
      EventResolver,
      WebhookEndpointResolver,
      ConsentResolver,
      ConsentAdminResolver,
      PayerControlsResolver,
      PasskeyResolver,
    ],
    container: containerOf,
    // type-graphql insists on a PubSub once a subscription exists; ours subscribe through the
    // gateway's EventHub (PaymentRequestSubscriptions), so this one stays unused.
    pubSub: createPubSub(),
    validate: false,
    // Every `@Authorized(Role…)` is decided here; refusals are our own UNAUTHENTICATED/FORBIDDEN errors.
    authChecker,
    // No NUL reaches PostgreSQL text; root fields: one rate-limit point each, and a bounded share of the pool per operation.
    // With tracing on (decided before the schema is built), non-trivial resolvers get spans first.
    globalMiddlewares: [...(tracing.on ? [traceResolvers()] : []), refuseNulArguments, rootFieldGate],
    emitSchemaFile: false,
  });
  return built;
}
