// A gateway as built at another commit, beside this one, so that a benchmark measures "before" and
// "after" in the same run on the same machine: `git worktree add` of the commit under the system's
// temporary directory, this checkout's node_modules linked in (the dependencies must not differ),
// and `tsc -p tsconfig.build.json` there. Reused while the worktree exists; `git worktree remove`
// (or `git worktree prune` after deleting it) ends it.
import { execFileSync } from 'node:child_process';
import { existsSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The directory of `rev` built (its `dist/src/main.js` is the gateway), made once per commit. */
export function buildAt(root, rev, log = () => undefined) {
  const commit = execFileSync('git', ['-C', root, 'rev-parse', '--verify', `${rev}^{commit}`], { encoding: 'utf8' }).trim();
  const dir = path.join(tmpdir(), `wallet-gateway-at-${commit.slice(0, 12)}`);
  if (!existsSync(path.join(dir, 'dist/src/main.js'))) {
    if (!existsSync(dir)) execFileSync('git', ['-C', root, 'worktree', 'add', '--detach', dir, commit], { stdio: 'ignore' });
    if (!existsSync(path.join(dir, 'node_modules'))) symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
    log(`building ${commit.slice(0, 12)} in ${dir}`);
    execFileSync(path.join(root, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
  }
  return dir;
}
