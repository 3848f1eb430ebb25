import { Field, ObjectType } from 'type-graphql';

@ObjectType('WalletIdResponse')
export class WalletIdResponse {
  @Field(() => String)
  walletId!: string;
}
