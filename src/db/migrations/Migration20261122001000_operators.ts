import { Migration } from '@mikro-orm/migrations';

/**
 * Operator identities: named admin credentials besides the bootstrap ADMIN_TOKEN. Only the
 * SHA-256 of a token is stored; two active operators never share a name (the audit log shows
 * names), a revoked operator's name may be reused.
 */
export class Migration20261122001000_operators extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table operators (
      id uuid primary key,
      name text not null check (length(name) between 1 and 100 and name = btrim(name)),
      token_hash char(64) not null unique,
      -- milliseconds, like every other created_at: the page cursor carries a JavaScript Date
      created_at timestamptz not null default date_trunc('milliseconds', now()),
      revoked_at timestamptz
    );`);
    this.addSql(`create unique index operators_active_name_uq on operators (lower(name)) where revoked_at is null;`);
  }
}
