import { Field, ID, ObjectType } from 'type-graphql';
import type { PasskeyRecord } from './passkey.service.js';

@ObjectType('Passkey', { description: "One of the wallet user's passkeys (WebAuthn credentials); never the key itself." })
export class PasskeyView {
  @Field(() => ID)
  id!: string;

  @Field(() => String, { description: 'The name the user gave it ("Passkey" when none).' })
  name!: string;

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date, { nullable: true, description: 'When it last approved a payment.' })
  lastUsedAt!: Date | null;

  static from(record: PasskeyRecord): PasskeyView {
    return Object.assign(new PasskeyView(), record);
  }
}
