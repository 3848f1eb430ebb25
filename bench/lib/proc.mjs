// CPU time from /proc for the benchmarks (bench/approval.mjs, bench/approvals.mjs): a gateway's
// process tree (its process group: the cluster's primary and workers) and every PostgreSQL process.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

/** Clock ticks per second (utime/stime are in ticks). */
export const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

export function procTable() {
  const t = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = readFileSync(`/proc/${d}/stat`, 'utf8');
      const x = s.slice(s.lastIndexOf(')') + 2).split(' ');
      t.set(Number(d), { name: s.slice(s.indexOf('(') + 1, s.lastIndexOf(')')), ppid: Number(x[1]), pgrp: Number(x[2]), ticks: Number(x[11]) + Number(x[12]), children: Number(x[13]) + Number(x[14]) });
    } catch {
      // gone
    }
  }
  return t;
}

/** CPU ticks of a process group led by `root` (a gateway spawned detached). */
export const gatewayTicks = (root) => {
  let sum = 0;
  for (const [pid, p] of procTable()) if (pid === root || p.pgrp === root) sum += p.ticks;
  return sum;
};

/** CPU ticks of every postgres process, exited backends included (through their parent's children ticks). */
export const postgresTicks = () => {
  let sum = 0;
  for (const [, p] of procTable()) if (p.name === 'postgres' || p.name === 'postmaster') sum += p.ticks + p.children;
  return sum;
};

/** Runs a command to its end; resolves with its exit code and output (stdout and stderr). */
export function run(cmd, args, env = {}) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('exit', (code) => resolve({ code, out }));
  });
}

export const median = (xs) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};
