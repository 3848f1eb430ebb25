import { Field, ID, ObjectType } from 'type-graphql';
import type { BlockedMerchantRow } from './payer-controls.service.js';

@ObjectType('BlockedMerchant', { description: 'A merchant the wallet holder no longer accepts payment requests from.' })
export class BlockedMerchantView {
  @Field(() => ID, { description: 'Pass to unblockMerchant.' })
  id!: string;

  @Field(() => String, { description: 'The merchantName of the request it was blocked from.' })
  merchantName!: string;

  @Field(() => Date)
  blockedAt!: Date;

  static from(row: BlockedMerchantRow): BlockedMerchantView {
    return Object.assign(new BlockedMerchantView(), { id: row.id, merchantName: row.merchantName, blockedAt: row.blockedAt });
  }
}
