import { Field, ID, ObjectType, registerEnumType } from 'type-graphql';
import type { OutboxPayload } from '../events/events.js';
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

/** What happened to a passkey. */
export enum PasskeyChange {
  ADDED = 'ADDED',
  REMOVED = 'REMOVED',
}
registerEnumType(PasskeyChange, { name: 'PasskeyChange', description: 'A passkey was added to the wallet or removed from it.' });

@ObjectType('PasskeyNotice', {
  description:
    "Sent to the wallet's owner on every device when a passkey is added or removed (whoever did it, on any instance): a change they did not make is seen at once.",
})
export class PasskeyNotice {
  @Field(() => PasskeyChange)
  change!: PasskeyChange;

  @Field(() => PasskeyView, { description: 'The passkey as it was when added or removed.' })
  passkey!: PasskeyView;

  @Field(() => Date, { description: 'When it happened.' })
  at!: Date;

  /** The notice an outbox event (`passkey.added` / `passkey.removed`) carries. */
  static of(event: OutboxPayload): PasskeyNotice {
    const p = event.data.passkey as { id: string; name: string; createdAt: string; lastUsedAt: string | null };
    return Object.assign(new PasskeyNotice(), {
      change: event.type === 'passkey.removed' ? PasskeyChange.REMOVED : PasskeyChange.ADDED,
      passkey: PasskeyView.from({ id: p.id, name: p.name, createdAt: new Date(p.createdAt), lastUsedAt: p.lastUsedAt === null ? null : new Date(p.lastUsedAt) }),
      at: new Date(event.createdAt),
    });
  }
}
