import { Field, ID, ObjectType } from 'type-graphql';
import { Connection } from '../graphql/connection.js';
import type { Operator } from './operator.entity.js';

@ObjectType('Operator', { description: 'Internal tools: a named admin credential. Its token is never shown again.' })
export class OperatorView {
  @Field(() => ID, { description: 'The operator\'s id, as createOperator, revokeOperator and auditLog name it.' }) operatorId!: string;
  @Field(() => ID, { deprecationReason: 'Use operatorId: the one name of this id across the admin graph.' }) id!: string;
  @Field(() => String) name!: string;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date, { nullable: true }) revokedAt!: Date | null;

  static from(o: Operator): OperatorView {
    return Object.assign(new OperatorView(), { operatorId: o.id, id: o.id, name: o.name, createdAt: o.createdAt, revokedAt: o.revokedAt });
  }
}

@ObjectType('IssuedOperator', { description: 'The operator token (`op_…`) is shown here once and never again; send it as `Authorization: Bearer`.' })
export class IssuedOperator {
  @Field(() => ID) operatorId!: string;
  @Field(() => String) name!: string;
  @Field(() => String) token!: string;
}

@ObjectType('RevokedOperator')
export class RevokedOperator {
  @Field(() => ID) operatorId!: string;
  @Field(() => Date) revokedAt!: Date;
}

@ObjectType('CurrentOperator', { description: "Who an admin call runs as: an operator, or 'root' (ADMIN_TOKEN) / 'cli' with no id." })
export class CurrentOperator {
  @Field(() => ID, { nullable: true, description: 'The operator\'s id (null for root and cli), as createOperator and auditLog name it.' }) operatorId!: string | null;
  @Field(() => ID, { nullable: true, deprecationReason: 'Use operatorId: the one name of this id across the admin graph.' }) id!: string | null;
  @Field(() => String) name!: string;
}

export const OperatorConnection = Connection(OperatorView, 'OperatorConnection');
