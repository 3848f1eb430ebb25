import { Field, Float, ID, InputType, ObjectType } from 'type-graphql';
import { WalletStatus } from '../accounts/wallet.entity.js';
import { PaymentRequestStatus } from '../payment-requests/payment-request.entity.js';
import { TransactionStatus } from '../transactions/transaction.entity.js';
import { TransactionView } from '../transactions/transaction.types.js';
import { PaymentRequestView } from '../payment-requests/payment-request.types.js';
import { Connection } from './pagination.js';

@ObjectType('Developer', { description: 'Internal tools: a developer account.' })
export class DeveloperView {
  @Field(() => ID) id!: string;
  @Field(() => String) name!: string;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('IssuedSecretKey', { description: 'The full secret key is shown here once and never again.' })
export class IssuedSecretKey {
  @Field(() => ID) keyId!: string;
  @Field(() => String) secretKey!: string;
}

@ObjectType('RevokedSecretKey')
export class RevokedSecretKey {
  @Field(() => ID) keyId!: string;
  @Field(() => Date) revokedAt!: Date;
}

@ObjectType('CreatedUser')
export class CreatedUser {
  @Field(() => ID) userId!: string;
  @Field(() => String) walletId!: string;
}

@ObjectType('Wallet', { description: 'Internal tools: a wallet.' })
export class WalletView {
  @Field(() => String) walletId!: string;
  @Field(() => ID) userId!: string;
  @Field(() => WalletStatus) status!: WalletStatus;
  @Field(() => Float) balance!: number;
  @Field(() => String) currency!: string;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

@InputType('CreateUserInput')
export class CreateUserInput {
  @Field(() => String, { description: '3-32 of a-z 0-9 _ . ; not starting with 8, 9, 08 or 09.' })
  username!: string;

  @Field(() => String, { description: 'Digits; a leading 0 is dropped (0912345678 = 912345678).' })
  phone!: string;

  @Field(() => Float, { nullable: true, description: 'Opening balance (a TOPUP ledger entry).' })
  balance?: number;

  @Field(() => String, { nullable: true, description: 'ISO 4217; DEFAULT_CURRENCY when omitted.' })
  currency?: string;
}

@InputType('PaymentRequestFilter')
export class PaymentRequestFilter {
  @Field(() => PaymentRequestStatus, { nullable: true }) status?: PaymentRequestStatus;
  @Field(() => ID, { nullable: true }) developerId?: string;
  @Field(() => String, { nullable: true }) walletId?: string;
}

@InputType('TransactionFilter')
export class TransactionFilter {
  @Field(() => TransactionStatus, { nullable: true }) status?: TransactionStatus;
  @Field(() => ID, { nullable: true }) developerId?: string;
}

export const DeveloperConnection = Connection(DeveloperView, 'DeveloperConnection');
export const WalletConnection = Connection(WalletView, 'WalletConnection');
export const PaymentRequestConnection = Connection(PaymentRequestView, 'PaymentRequestConnection');
export const TransactionConnection = Connection(TransactionView, 'TransactionConnection');
