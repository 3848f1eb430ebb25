import { Field, InputType, ObjectType } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';

@InputType('ApprovalVerificationInput', {
  description: 'How the payer confirms an approval: exactly one of `pin` or `passkey`.',
})
export class ApprovalVerificationInput {
  @Field(() => String, { nullable: true, description: "The wallet's transaction PIN, 4 to 6 digits." })
  pin?: string | null;

  @Field(() => GraphQLJSONObject, {
    nullable: true,
    description: 'A WebAuthn assertion (JSON, as the browser returns it) for the challenge of approvalChallenge(id).',
  })
  passkey?: Record<string, unknown> | null;
}

@ObjectType('TransactionPinReset', { description: "Internal tools: a wallet's new transaction PIN, shown this once." })
export class TransactionPinReset {
  @Field(() => String) walletId!: string;
  @Field(() => String, { description: 'The new PIN (only its hash is kept).' }) pin!: string;
}
