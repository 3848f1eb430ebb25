import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository root: the nearest directory above this module holding package.json. Works from
 * the sources (src/) and from the build (dist/src/) alike; files shipped beside the code
 * (schema/, dist/web) are found from it.
 */
export function projectRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('no package.json above src/project-root');
    dir = parent;
  }
}
