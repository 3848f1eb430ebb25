// Preloaded into every server process the bench measures (`node --import bench/probe.mjs`,
// inherited by cluster workers through NODE_OPTIONS): counts the PostgreSQL round trips the
// process makes (each `pg` Client#query is one) and, on SIGUSR2, writes its counters, CPU time
// and memory to `$BENCH_PROBE_DIR/<pid>.json` for the bench to read. Measurement only.
import { createRequire } from 'node:module';
import { writeFileSync, renameSync } from 'node:fs';

const dir = process.env.BENCH_PROBE_DIR;
if (dir) {
  const pg = createRequire(`${process.cwd()}/`)('pg');
  let queries = 0;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function countedQuery(...args) {
    queries++;
    return query.apply(this, args);
  };
  process.on('SIGUSR2', () => {
    const mem = process.memoryUsage();
    const cpu = process.cpuUsage();
    const file = `${dir}/${process.pid}.json`;
    writeFileSync(`${file}.tmp`, JSON.stringify({ pid: process.pid, at: Date.now(), queries, cpuMicros: cpu.user + cpu.system, rss: mem.rss, heapUsed: mem.heapUsed }));
    renameSync(`${file}.tmp`, file);
  });
}
