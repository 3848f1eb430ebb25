import 'reflect-metadata';
import { buildSchema } from 'type-graphql';
import type { GraphQLSchema } from 'graphql';
import { PaymentRequestResolver } from './payment-requests/payment-request.resolver.js';
import { TransactionResolver } from './transactions/transaction.resolver.js';
import { AccountResolver } from './accounts/account.resolver.js';
import { AdminResolver } from './admin/admin.resolver.js';

let built: Promise<GraphQLSchema> | undefined;

/** The one GraphQL schema; built once per process (type-graphql metadata is global). */
export function getSchema(): Promise<GraphQLSchema> {
  built ??= buildSchema({
    resolvers: [PaymentRequestResolver, TransactionResolver, AccountResolver, AdminResolver],
    validate: false,
    emitSchemaFile: false,
  });
  return built;
}
