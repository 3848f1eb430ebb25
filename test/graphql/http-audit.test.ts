// The GraphQL over HTTP specification's audit suite (npm graphql-http, `serverAudits`) against the
// gateway's /graphql: every MUST passes (SHOULD and MAY audits are printed, not required; stock
// Apollo Server gives the same 3 warnings and 3 notices).
import { auditServer } from 'graphql-http';
import { useTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
useTestApp({}, (x) => ({ app } = x));

test('graphql-http serverAudits: every MUST is ok', async () => {
  const results = await auditServer({ url: `${app.baseUrl}/graphql` });
  const musts = results.filter((r) => r.name.startsWith('MUST'));
  expect(musts.length).toBeGreaterThanOrEqual(13);
  const reason = (r: (typeof results)[number]) => ('reason' in r ? r.reason : '');
  expect(musts.filter((r) => r.status !== 'ok').map((r) => `${r.id} ${r.name}: ${reason(r)}`)).toEqual([]);
  const count = (status: string) => results.filter((r) => r.status === status).length;
  process.stderr.write(
    `[graphql-http audit] ${count('ok')} ok, ${count('warn')} warnings, ${count('notice')} notices, ${count('error')} errors\n` +
      results.filter((r) => r.status !== 'ok').map((r) => `  ${r.status} ${r.name}: ${reason(r)}\n`).join(''),
  );
});
