import { Field, Float, ObjectType } from 'type-graphql';
import { WalletStatus } from './wallet.entity.js';

@ObjectType('WalletIdResponse')
export class WalletIdResponse {
  @Field(() => String)
  walletId!: string;
}

/** The signed-in user's own wallet, as the wallet app shows it. */
@ObjectType('MyWallet', { description: "Wallet app (user token): the signed-in user's wallet." })
export class MyWallet {
  @Field(() => String) walletId!: string;
  @Field(() => String) username!: string;
  @Field(() => WalletStatus) status!: WalletStatus;
  @Field(() => Float) balance!: number;
  @Field(() => Float, { description: 'balance minus the holds of MANUAL payments approved and not yet captured or voided.' }) availableBalance!: number;
  @Field(() => String) currency!: string;
}
