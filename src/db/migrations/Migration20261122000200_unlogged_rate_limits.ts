import { Migration } from '@mikro-orm/migrations';

/**
 * Rate-limit counters are ephemeral: losing them in a crash only resets a window. An UNLOGGED
 * table skips the write-ahead log, so a counter update never waits for a WAL flush (measured when
 * every request still updated its counter: the logged table halved REST throughput on one hot
 * key; counters are now leased in blocks, see src/rate-limit.ts).
 */
export class Migration20261122000200_unlogged_rate_limits extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table rate_limits set unlogged;`);
  }
}
