import { Entity, PrimaryKey, Property } from '@mikro-orm/core';

/**
 * One row of the append-only audit log (read through the ORM, written by `AuditService.record`;
 * the database refuses UPDATE, DELETE and TRUNCATE). `createdAt` is the `at` column, so the
 * log pages like every other admin list.
 */
@Entity({ tableName: 'audit_log' })
export class AuditEntry {
  @PrimaryKey({ type: 'bigint' })
  id!: string;

  @Property({ type: 'datetime', columnType: 'timestamptz', fieldName: 'at' })
  createdAt!: Date;

  @Property({ type: 'text' })
  actor!: string;

  @Property({ type: 'uuid', nullable: true })
  operatorId!: string | null;

  @Property({ type: 'text' })
  operation!: string;

  @Property({ type: 'json', fieldName: 'arguments' })
  args!: Record<string, unknown>;

  @Property({ type: 'text' })
  outcome!: string;

  @Property({ type: 'text', nullable: true })
  requestId!: string | null;
}
