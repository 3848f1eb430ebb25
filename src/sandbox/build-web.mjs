// Bundles the sandbox pages' browser code (src/sandbox/web) into dist/web with esbuild: the
// wallet-app page (graphql-ws client) and GraphiQL (React, its stylesheet with inlined fonts).
// Runs as part of `npm run build`; the gateway serves the result at /sandbox/assets (no CDN).
import { build } from 'esbuild';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const started = Date.now();
const result = await build({
  absWorkingDir: root,
  entryPoints: {
    app: 'src/sandbox/web/app.js',
    'app-style': 'src/sandbox/web/app.css',
    graphiql: 'src/sandbox/web/graphiql.js',
  },
  outdir: 'dist/web',
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  minify: true,
  legalComments: 'linked',
  define: { 'process.env.NODE_ENV': '"production"' },
  loader: { '.woff2': 'dataurl', '.woff': 'dataurl', '.ttf': 'dataurl', '.png': 'dataurl', '.svg': 'dataurl' },
  entryNames: '[name]',
  logLevel: 'warning',
  metafile: true,
});
const sizes = Object.entries(result.metafile.outputs)
  .filter(([file]) => !file.endsWith('.LEGAL.txt'))
  .map(([file, out]) => `${path.basename(file)} ${Math.round(out.bytes / 1024)} KiB`);
process.stdout.write(`[build-web] ${sizes.join(', ')} in ${Date.now() - started} ms\n`);
