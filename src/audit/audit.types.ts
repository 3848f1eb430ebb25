import { Field, ID, InputType, ObjectType } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import { Connection } from '../graphql/connection.js';
import type { AuditEntry } from './audit-entry.entity.js';

@ObjectType('AuditEntry', { description: 'Internal tools: one admin mutation or data-changing CLI command, as it happened.' })
export class AuditEntryView {
  @Field(() => ID) id!: string;
  @Field(() => Date) at!: Date;
  @Field(() => String, { description: "The operator's name, 'root' (ADMIN_TOKEN) or 'cli'." })
  actor!: string;
  @Field(() => ID, { nullable: true, description: 'The operator; null for root and the CLI.' })
  operatorId!: string | null;
  @Field(() => String, { description: 'The mutation, e.g. createDeveloper.' })
  operation!: string;
  @Field(() => GraphQLJSONObject, { description: 'Its arguments, with secrets masked.' })
  arguments!: Record<string, unknown>;
  @Field(() => String, { description: "'ok' or the error code the caller was given." })
  outcome!: string;
  @Field(() => String, { nullable: true }) requestId!: string | null;

  static from(e: AuditEntry): AuditEntryView {
    return Object.assign(new AuditEntryView(), {
      id: e.id,
      at: e.createdAt,
      actor: e.actor,
      operatorId: e.operatorId,
      operation: e.operation,
      arguments: e.args,
      outcome: e.outcome,
      requestId: e.requestId,
    });
  }
}

@InputType('AuditLogFilter')
export class AuditLogFilter {
  @Field(() => String, { nullable: true, description: "An actor name ('root', 'cli', an operator's name) or an operator id." })
  operator?: string;
  @Field(() => String, { nullable: true, description: 'A mutation name, e.g. refundTransaction.' })
  operation?: string;
  @Field(() => Date, { nullable: true, description: 'From this instant (inclusive).' })
  from?: Date;
  @Field(() => Date, { nullable: true, description: 'Until this instant (exclusive).' })
  to?: Date;
}

export const AuditEntryConnection = Connection(AuditEntryView, 'AuditEntryConnection');
