import { Entity, PrimaryKey, Property } from '@mikro-orm/core';

/** A developer's secret key as stored: its id and the SHA-256 of the full key, never the key. */
@Entity({ tableName: 'secret_keys' })
export class SecretKey {
  @PrimaryKey({ type: 'uuid' })
  id!: string;

  @Property({ type: 'uuid' })
  developerId!: string;

  @Property({ type: 'text' })
  keyHash!: string;

  @Property({ type: 'text' })
  environment!: 'test' | 'live';

  @Property({ type: 'datetime', columnType: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'datetime', columnType: 'timestamptz', nullable: true })
  revokedAt: Date | null = null;
}
