/**
 * The docs' walk-throughs, pasted as a new user pastes them (issue 33): the ```sh blocks of
 * README.md and docs/*.md marked `<!-- walkthrough: NAME -->` run as written, in order, in one
 * bash session (a page "after the README" continues the README's session, its variables and
 * files), against a development gateway with its test wallets on a free port. The only change to
 * the text: the documented http://127.0.0.1:3000 names that gateway (its links keep the default
 * PUBLIC_BASE_URL, http://localhost:3000, as the docs show).
 * The session runs in a temporary directory whose `npx wallet-gateway` is this repository's CLI
 * (the reader's repository directory, without writing into this one); the CLI's database commands
 * reach the gateway's database (DATABASE_URL), its developer commands the gateway
 * (WALLET_GATEWAY_URL). Every command must exit 0; every answer a comment promises
 * (`# {"status":"PENDING",…}`) must match it (./walkthrough.ts says how); an answer nothing is
 * promised for must not be an error. Every shell block is marked: run, or not run and why.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ROOT, cliDatabaseEnv } from '../helpers/cli.js';
import { withDeadline } from '../helpers/expect.js';
import { errorIn, expectedShape, matchShape, shellBlocks, statements, type ShellBlock } from './walkthrough.js';

/** The walk-throughs in the order a new user pastes them: the README first, then each page that continues it. */
const WALKTHROUGHS = ['readme', 'links-and-capture', 'getting-paid'] as const;

async function allBlocks(): Promise<ShellBlock[]> {
  const files = ['README.md', ...(await readdir(path.join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
  const blocks: ShellBlock[] = [];
  for (const file of files) blocks.push(...shellBlocks(file, await readFile(path.join(ROOT, file), 'utf8')));
  return blocks;
}

/** A bash the test types into, one statement at a time, as a reader pastes. */
class Shell {
  private stdout = '';
  private stderr = '';
  private exited: Promise<number | null>;
  private seq = 0;
  constructor(private readonly child: ChildProcessWithoutNullStreams) {
    child.stdout.on('data', (c: Buffer) => (this.stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (this.stderr += c.toString('utf8')));
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    // What a terminal would stop at: a failed pipeline stage, a variable never set.
    child.stdin.write('set -uo pipefail\n');
  }

  /** Runs one statement; its exit status, stdout and stderr. */
  async run(command: string, ms = 90_000): Promise<{ status: number; stdout: string; stderr: string }> {
    const mark = `\u001eWALK${++this.seq}`;
    // stdin of the statement is /dev/null: nothing it runs can read the rest of the script.
    this.child.stdin.write(`{\n${command}\n} </dev/null\nprintf '\\n${mark} %d\\n' $?\nprintf '${mark}\\n' >&2\n`);
    const done = new RegExp(`\\n${mark} (\\d+)\\n`);
    const finished = (async () => {
      for (;;) {
        const m = done.exec(this.stdout);
        if (m && this.stderr.includes(`${mark}\n`)) {
          const stdout = this.stdout.slice(0, m.index);
          const stderr = this.stderr.slice(0, this.stderr.indexOf(`${mark}\n`));
          this.stdout = this.stdout.slice(m.index + m[0].length);
          this.stderr = this.stderr.slice(this.stderr.indexOf(`${mark}\n`) + mark.length + 1);
          return { status: Number(m[1]), stdout, stderr };
        }
        const code = await Promise.race([this.exited, new Promise<'tick'>((r) => setTimeout(() => r('tick'), 20))]);
        if (code !== 'tick') throw new Error(`the shell exited (${code}) during:\n${command}\nstderr: ${this.stderr}`);
      }
    })();
    return withDeadline(finished, ms, `the statement\n${command}`);
  }

  close(): void {
    this.child.stdin.end();
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

let app: TestApp;
let dir: string;
let shell: Shell;
let blocks: ShellBlock[];
let started: number;

/** The files under a directory (relative paths), node_modules left out. */
async function filesUnder(root: string, sub = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(root, sub), { withFileTypes: true })) {
    const rel = path.join(sub, entry.name);
    if (entry.name === 'node_modules') continue;
    if (entry.isDirectory()) out.push(...(await filesUnder(root, rel)));
    else out.push(rel);
  }
  return out;
}

beforeAll(async () => {
  blocks = await allBlocks();
  started = Date.now();
  app = await startTestApp({ env: { SANDBOX_TEST_WALLETS: 'true', SANDBOX_DELAY_MS: '100' } });
  // The reader's directory: here `npx wallet-gateway` is this repository's CLI, as in a clone.
  dir = await mkdtemp(path.join(tmpdir(), 'walkthrough-'));
  await mkdir(path.join(dir, 'node_modules', '.bin'), { recursive: true });
  await symlink(path.join(ROOT, 'bin', 'wallet-gateway.js'), path.join(dir, 'node_modules', '.bin', 'wallet-gateway'));
  const env = {
    ...cliDatabaseEnv(app.database),
    // The project's Node 24 first, as `npm install` arranges for npm's commands.
    PATH: `${path.join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}`,
    WALLET_GATEWAY_URL: app.baseUrl,
    LANG: 'C.UTF-8',
  };
  shell = new Shell(spawn('bash', ['--noprofile', '--norc'], { cwd: dir, env, stdio: 'pipe', detached: true }));
});

afterAll(async () => {
  shell?.close();
  await app?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('every shell block of README.md and docs/*.md is marked: a walk-through that runs, or not run and why; every promised answer reads', () => {
  const unmarked = blocks.filter((b) => !b.walkthrough && !b.notRun).map((b) => `${b.file}:${b.line}`);
  expect(unmarked).toEqual([]);
  const unknown = blocks.filter((b) => b.walkthrough && !(WALKTHROUGHS as readonly string[]).includes(b.walkthrough)).map((b) => `${b.file}:${b.line} ${b.walkthrough}`);
  expect(unknown).toEqual([]);
  for (const name of WALKTHROUGHS) expect([name, blocks.some((b) => b.walkthrough === name)]).toEqual([name, true]);
  for (const block of blocks) for (const s of statements(block)) for (const e of s.expected) expect(() => expectedShape(e)).not.toThrow();
});

describe.each(WALKTHROUGHS)('the %s walk-through, pasted as written', (name) => {
  test('every command succeeds and every answer is the one the docs show', async () => {
    const here = (text: string): string => text.replaceAll('http://127.0.0.1:3000', app.baseUrl);
    const mine = blocks.filter((b) => b.walkthrough === name);
    let ran = 0;
    for (const block of mine) {
      for (const s of statements(block)) {
        const where = `${block.file}:${s.line}\n${s.command}`;
        const result = await shell.run(here(s.command));
        ran++;
        expect({ where, status: result.status, stderr: result.stderr }).toEqual({ where, status: 0, stderr: '' });
        if (s.expected.length === 0) {
          expect({ where, error: errorIn(result.stdout) }).toEqual({ where, error: undefined });
          continue;
        }
        // The answer the last promise describes (several promises: alternatives, the last is this one's).
        const promised = here(s.expected.at(-1)!);
        let answer: unknown;
        try {
          answer = JSON.parse(result.stdout.trim());
        } catch {
          throw new Error(`${where}\nanswered what is not JSON: ${result.stdout}`);
        }
        expect({ where, answer, differences: matchShape(answer, expectedShape(promised)) }).toEqual({ where, answer, differences: [] });
      }
    }
    expect(ran).toBeGreaterThan(0);
  });
});

test('the walk-throughs wrote their files in their own directory, none into the repository', async () => {
  const written = await filesUnder(dir);
  expect(written).toEqual(expect.arrayContaining(['tmp/demo.json', 'tmp/link.json', 'tmp/bill.svg', 'tmp/bill.png', 'tmp/order.json', 'tmp/payout.csv']));
  // The same paths in the repository: absent, or older than this file's run.
  const touched: string[] = [];
  for (const rel of written) {
    const there = await stat(path.join(ROOT, rel)).catch(() => undefined);
    if (there && there.mtimeMs >= started) touched.push(rel);
  }
  expect(touched).toEqual([]);
});
