import { Field, Float, ID, InputType, Int, ObjectType } from 'type-graphql';
import { WalletStatus } from '../accounts/wallet.entity.js';
import { PaymentRequestStatus } from '../payment-requests/payment-request.entity.js';
import { TransactionStatus } from '../transactions/transaction.entity.js';
import { TransactionView } from '../transactions/transaction.types.js';
import { PaymentRequestView } from '../payment-requests/payment-request.types.js';
import { Connection } from '../graphql/connection.js';

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
  @Field(() => String, { description: "The wallet's transaction PIN, shown this once (only its hash is kept)." }) pin!: string;
}

@ObjectType('Wallet', { description: 'Internal tools: a wallet.' })
export class WalletView {
  @Field(() => String) walletId!: string;
  @Field(() => ID) userId!: string;
  @Field(() => WalletStatus) status!: WalletStatus;
  @Field(() => Float) balance!: number;
  @Field(() => Float, { description: 'The sum of its active holds (MANUAL payments approved, not yet captured or voided).' }) held!: number;
  @Field(() => Float, { description: 'balance - held: what it can spend or hold now.' }) availableBalance!: number;
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

  @Field(() => String, { nullable: true, description: "The wallet's transaction PIN, 4 to 6 digits; a random 6-digit one when omitted (in the result either way)." })
  pin?: string;
}

@InputType('PaymentRequestFilter')
export class PaymentRequestFilter {
  @Field(() => PaymentRequestStatus, { nullable: true, description: 'The status clients see (PENDING past expiresAt is EXPIRED).' })
  status?: PaymentRequestStatus;
  @Field(() => ID, { nullable: true }) developerId?: string;
  @Field(() => String, { nullable: true }) walletId?: string;
  @Field(() => ID, { nullable: true, description: "The wallet owner's user id." }) userId?: string;
  @Field(() => String, { nullable: true, description: "The wallet owner's phone, any form." }) phone?: string;
  @Field(() => String, { nullable: true, description: "The wallet owner's username, without regard to case." }) username?: string;
  @Field(() => Date, { nullable: true, description: 'Created at or after.' }) createdFrom?: Date;
  @Field(() => Date, { nullable: true, description: 'Created before.' }) createdTo?: Date;
  @Field(() => Float, { nullable: true }) amountMin?: number;
  @Field(() => Float, { nullable: true }) amountMax?: number;
  @Field(() => String, { nullable: true, description: "The merchant's own reference, exactly." }) reference?: string;
  @Field(() => Boolean, { nullable: true, description: 'true: only requests their payers reported as unwanted; false: only the others.' })
  reported?: boolean;
}

@InputType('TransactionFilter')
export class TransactionFilter {
  @Field(() => TransactionStatus, { nullable: true }) status?: TransactionStatus;
  @Field(() => ID, { nullable: true }) developerId?: string;
  @Field(() => String, { nullable: true }) walletId?: string;
  @Field(() => Date, { nullable: true, description: 'Created at or after.' }) createdFrom?: Date;
  @Field(() => Date, { nullable: true, description: 'Created before.' }) createdTo?: Date;
  @Field(() => Float, { nullable: true }) amountMin?: number;
  @Field(() => Float, { nullable: true }) amountMax?: number;
}

export const DeveloperConnection = Connection(DeveloperView, 'DeveloperConnection');
export const WalletConnection = Connection(WalletView, 'WalletConnection');
export const PaymentRequestConnection = Connection(PaymentRequestView, 'PaymentRequestConnection');
export const TransactionConnection = Connection(TransactionView, 'TransactionConnection');

@ObjectType('User', { description: 'Internal tools: a wallet user.' })
export class UserView {
  @Field(() => ID) id!: string;
  @Field(() => String) username!: string;
  @Field(() => String, { description: 'National number without the leading 0.' }) phone!: string;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('DeveloperBalance', { description: "A developer's settlement balance in one currency." })
export class DeveloperBalanceView {
  @Field(() => String) currency!: string;
  @Field(() => Float, { description: 'The available balance (as `available`).' }) balance!: number;
  @Field(() => Float, { description: 'What can be paid out: Σ net of its balance transactions.' }) available!: number;
  @Field(() => Float, { description: 'What PENDING payouts hold.' }) inPayouts!: number;
}

@ObjectType('SecretKeyInfo', { description: 'A secret key without its secret (only its id and state).' })
export class SecretKeyView {
  @Field(() => ID) keyId!: string;
  @Field(() => String) environment!: string;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date, { nullable: true }) revokedAt!: Date | null;
}

@ObjectType('LedgerEntry', { description: 'One side of a balance change.' })
export class LedgerEntryView {
  @Field(() => ID) id!: string;
  @Field(() => String, { description: 'PAYMENT, REFUND, TOPUP, FEE, PAYOUT, PAYOUT_PAID, PAYOUT_REVERSAL or ADJUSTMENT.' }) kind!: string;
  @Field(() => String, {
    description: "WALLET, DEVELOPER (its available balance), DEVELOPER_PAYOUTS (its money in payouts) or COMPANY (the wallet company's own account).",
  })
  account!: string;
  @Field(() => String, { nullable: true, description: 'The wallet side (null for the developer side).' }) walletId!: string | null;
  @Field(() => ID, { nullable: true, description: 'The developer side (null for the wallet side).' }) developerId!: string | null;
  @Field(() => ID, { nullable: true }) transactionId!: string | null;
  @Field(() => ID, { nullable: true }) refundId!: string | null;
  @Field(() => ID, { nullable: true }) payoutId!: string | null;
  @Field(() => Float, { description: 'Signed: negative leaves the account.' }) amount!: number;
  @Field(() => String) currency!: string;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('Refund', { description: 'One refund of (part of) a transaction.' })
export class RefundView {
  @Field(() => ID) id!: string;
  @Field(() => Float) amount!: number;
  @Field(() => String) currency!: string;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('LedgerMismatch')
export class LedgerMismatchView {
  @Field(() => String, {
    description:
      "WALLET, DEVELOPER or DEVELOPER_PAYOUTS (an account vs Σ its ledger entries), HOLD (a wallet's held total vs Σ its active holds), BALANCE_TRANSACTIONS (a developer's available balance vs Σ net of its balance transactions), IN_PAYOUTS (its money in payouts vs Σ its PENDING payouts), PAYOUT or PAYOUT_ITEMS (a payout's amount or item count vs Σ net or number of the balance transactions it holds), COMPANY (the wallet company's account vs fees less adjustments) or BOOKS (per currency, Σ of every entry inside the books vs 0).",
  })
  kind!: string;
  @Field(() => String, { description: 'The wallet id, developerId:currency, the payout id, or the currency.' }) id!: string;
  @Field(() => Float) balance!: number;
  @Field(() => Float) ledgerSum!: number;
}

@ObjectType('LedgerCheck', {
  description:
    'Σ ledger entries = balance for every wallet and developer account; Σ net of balance transactions = available per developer and currency; Σ items = amount per payout.',
})
export class LedgerCheckView {
  @Field(() => Boolean) ok!: boolean;
  @Field(() => Int) checkedWallets!: number;
  @Field(() => Int) checkedDevelopers!: number;
  @Field(() => Int) checkedPayouts!: number;
  @Field(() => [LedgerMismatchView]) mismatches!: LedgerMismatchView[];
}

@InputType('UserFilter')
export class UserFilter {
  @Field(() => String, { nullable: true, description: 'Exact, without regard to case.' }) username?: string;
  @Field(() => String, { nullable: true, description: 'Any form of the phone number (0912… or 912…).' }) phone?: string;
}

export const UserConnection = Connection(UserView, 'UserConnection');
export const LedgerEntryConnection = Connection(LedgerEntryView, 'LedgerEntryConnection');
