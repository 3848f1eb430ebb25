import { Migration } from '@mikro-orm/migrations';

/**
 * One row per acknowledged WebSocket: the per-user connection limit counted across every
 * process and instance on the database (src/ws/connection-slots.ts). UNLOGGED like the rate
 * limits: places are ephemeral, and the instances claim theirs again if a crash empties it.
 */
export class Migration20261124200000_ws_connections extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create unlogged table ws_connections (
      id uuid primary key,
      user_id text not null,
      instance_id uuid not null,
      expires_at timestamptz not null
    );`);
    this.addSql(`create index ws_connections_user_idx on ws_connections (user_id);`);
    this.addSql(`create index ws_connections_instance_idx on ws_connections (instance_id);`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists ws_connections;`);
  }
}
