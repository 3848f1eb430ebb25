/** The oldest Node major the gateway runs on: 24 LTS (20 is past end of life and gets no security fixes). */
export const MIN_NODE_MAJOR = 24;

/**
 * Refuses to run on an unsupported Node. `npm start`, `npm test` and `npx wallet-gateway` run on
 * the Node 24 that `npm install` puts at `node_modules/.bin/node` (the `node` package), even on a
 * machine whose own Node is older; this catches `node dist/src/main.js` typed with that older one.
 */
export function assertSupportedNode(version: string = process.versions.node, exit: (message: string) => never = fail): void {
  const major = Number(version.split('.')[0]);
  if (major >= MIN_NODE_MAJOR) return;
  exit(
    `wallet-gateway needs Node ${MIN_NODE_MAJOR} or newer; this is Node ${version}, which is past end of life.\n` +
      `Run it through npm (\`npm start\`, \`npx wallet-gateway\`): they use the Node ${MIN_NODE_MAJOR} that \`npm install\` put in node_modules/.bin.\n`,
  );
}

function fail(message: string): never {
  process.stderr.write(message);
  process.exit(1);
}
