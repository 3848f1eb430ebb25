// What `npm start` prints once it listens: the next steps in development, nothing in production.
import { readFileSync } from 'node:fs';
import { nextSteps, nextStepsText } from '../src/next-steps.js';
import { DEV_DEFAULTS } from '../src/config.js';

const URL = 'http://127.0.0.1:3000';

test('development: the pages, the demo command and the development admin token', () => {
  const steps = nextSteps(URL, { appEnv: 'development', adminToken: DEV_DEFAULTS.ADMIN_TOKEN })!;
  expect(steps).toEqual({
    app: 'http://localhost:3000/app', // passkeys need a domain, not an IP address
    docs: `${URL}/docs`,
    graphql: `${URL}/graphql`,
    demo: 'npx wallet-gateway demo',
    adminToken: DEV_DEFAULTS.ADMIN_TOKEN,
  });
  const text = nextStepsText(steps);
  for (const shown of Object.values(steps)) expect(text).toContain(shown);
  expect(text.trim().split('\n')).toHaveLength(6);
});

test('a token set in ADMIN_TOKEN is a secret: never printed, only where it comes from', () => {
  const secret = 'a-token-of-my-own-0123456789';
  const steps = nextSteps(`${URL}/`, { appEnv: 'development', adminToken: secret })!;
  expect(steps.app).toBe('http://localhost:3000/app');
  expect(JSON.stringify(steps)).not.toContain(secret);
  expect(nextStepsText(steps)).not.toContain(secret);
  expect(steps.adminToken).toMatch(/ADMIN_TOKEN you set/);
});

test('production: nothing of the sort', () => {
  expect(nextSteps(URL, { appEnv: 'production', adminToken: 'a-production-token-0123456789' })).toBeUndefined();
});

test.each(['README.md', 'docs/operations.md'])('%s shows the next steps `npm start` prints on its default port, line for line', (file) => {
  const text = readFileSync(new globalThis.URL(`../${file}`, import.meta.url), 'utf8');
  const shown = /\nNext steps:\n([\s\S]*?)\n(?:```|\n)/.exec(text);
  if (!shown) throw new Error(`${file} shows no "Next steps:" block`);
  const printed = nextStepsText(nextSteps(URL, { appEnv: 'development', adminToken: DEV_DEFAULTS.ADMIN_TOKEN })!);
  expect(`Next steps:\n${shown[1]}`).toBe(printed.trim());
});
