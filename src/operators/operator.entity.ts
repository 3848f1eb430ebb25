import { Entity, PrimaryKey, Property } from '@mikro-orm/core';

/** An operator of the internal tools as stored: a name and the SHA-256 of its token, never the token. */
@Entity({ tableName: 'operators' })
export class Operator {
  @PrimaryKey({ type: 'uuid' })
  id!: string;

  @Property({ type: 'text' })
  name!: string;

  @Property({ type: 'text', hidden: true })
  tokenHash!: string;

  @Property({ type: 'datetime', columnType: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'datetime', columnType: 'timestamptz', nullable: true })
  revokedAt: Date | null = null;
}
