import type { Config } from './config.js';
import { DEV_DEFAULTS } from './config.js';

/** Where a developer goes once `npm start` listens (development only). */
export interface NextSteps {
  app: string;
  docs: string;
  graphql: string;
  demo: string;
  /** The admin token in use when it is the built-in development default; otherwise where it comes from. */
  adminToken: string;
}

/**
 * The "next steps" of a development start: the wallet app, the API reference, GraphiQL, the
 * command that makes a merchant and test users, and the admin token in use. Undefined in
 * production, which prints nothing of the sort. The token is shown only when it is the
 * built-in development default (public, in the README); a token set in ADMIN_TOKEN is a secret
 * the developer already has, and is never printed.
 */
export function nextSteps(url: string, config: Pick<Config, 'appEnv' | 'adminToken'>): NextSteps | undefined {
  if (config.appEnv !== 'development') return undefined;
  const base = url.replace(/\/+$/, '');
  return {
    // The wallet app on localhost: passkeys need a domain as their relying party, never an IP address.
    app: `${base.replace(/^http:\/\/(127\.0\.0\.1|\[::1\]|0\.0\.0\.0)(?=[:/]|$)/, 'http://localhost')}/app`,
    docs: `${base}/docs`,
    graphql: `${base}/graphql`,
    // `demo` writes to the same database as this process (DATABASE_URL, else the embedded one).
    demo: 'npx wallet-gateway demo',
    adminToken: config.adminToken === DEV_DEFAULTS.ADMIN_TOKEN ? DEV_DEFAULTS.ADMIN_TOKEN : '(the ADMIN_TOKEN you set)',
  };
}

/** The block a person reads at a terminal (the pretty log format). */
export function nextStepsText(steps: NextSteps): string {
  return [
    '',
    'Next steps:',
    `  wallet app (test users)  ${steps.app}`,
    `  REST API reference       ${steps.docs}`,
    `  GraphQL (GraphiQL)       ${steps.graphql}`,
    `  a merchant and users     ${steps.demo}`,
    `  admin token              ${steps.adminToken}`,
    '',
  ].join('\n');
}
