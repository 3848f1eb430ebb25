// The house's one structural rule (docs/ARCHITECTURE.md "Doors on top"): the doors (REST, HTTP,
// WebSocket, CLI, and the pages served over HTTP) call the domain; the domain never imports a door.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src');

/** Folders of src/ that are doors, and the top-level files that assemble the process from doors and domain. */
const DOORS = ['rest', 'http', 'ws', 'cli', 'sandbox', 'openapi'];
const ASSEMBLY = ['server.ts', 'main.ts', 'gateway-main.ts', 'cluster.ts'];

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((e) => (e.isDirectory() ? sources(path.join(dir, e.name)) : Promise.resolve(e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []))),
  );
  return nested.flat();
}

/** The src/-relative targets of a file's relative imports (`import … from`, `export … from`, `import(…)`). */
function importsOf(file: string, text: string): string[] {
  const specifiers = [...text.matchAll(/(?:from\s+|import\s*\(\s*)'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
  return specifiers.map((s) => path.relative(SRC, path.resolve(path.dirname(file), s)));
}

test('no domain file imports a door (rest/, http/, ws/, cli/, sandbox/, openapi/)', async () => {
  const files = await sources(SRC);
  const domain = files.filter((f) => {
    const rel = path.relative(SRC, f);
    return !DOORS.includes(rel.split(path.sep)[0]!) && !ASSEMBLY.includes(rel);
  });
  expect(domain.length).toBeGreaterThan(50);
  const violations: string[] = [];
  for (const file of domain) {
    for (const target of importsOf(file, await readFile(file, 'utf8'))) {
      if (DOORS.includes(target.split(path.sep)[0]!)) violations.push(`${path.relative(SRC, file)} imports ${target}`);
    }
  }
  expect(violations).toEqual([]);
});

test('the check finds relative imports of every form', () => {
  const file = path.join(SRC, 'payment-requests', 'x.ts');
  expect(importsOf(file, `import { a } from '../rest/idempotency.js';\nexport { b } from '../http/body.js';\nawait import('../ws/x.js');`)).toEqual([
    path.join('rest', 'idempotency.js'),
    path.join('http', 'body.js'),
    path.join('ws', 'x.js'),
  ]);
});

test('`wallet-gateway listen|trigger` (src/cli/merchant-main.ts) loads the typed client, the webhook signing and Node, never the gateway', async () => {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = async (rel: string): Promise<void> => {
    if (seen.has(rel)) return;
    seen.add(rel);
    const file = path.join(SRC, rel.replace(/\.js$/, '.ts'));
    const text = await readFile(file, 'utf8');
    for (const m of text.matchAll(/^(?:import|export)(?!\s+type\b)[^'"]*?from\s+'([^']+)'|^import\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/gm)) {
      const spec = (m[1] ?? m[2] ?? m[3])!;
      if (spec.startsWith('.')) await visit(path.relative(SRC, path.resolve(path.dirname(file), spec)));
      else packages.add(spec);
    }
  };
  await visit(path.join('cli', 'merchant-main.js'));
  expect([...seen].sort()).toEqual([path.join('cli', 'merchant-main.js'), path.join('cli', 'merchant.js'), 'runtime.js', path.join('webhooks', 'signing.js')].sort());
  expect([...packages].filter((p) => !p.startsWith('node:')).sort()).toEqual(['@wallet-gateway/client', 'standardwebhooks']);
});
