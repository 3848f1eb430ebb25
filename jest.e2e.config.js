/**
 * Browser tests (`npm run test:e2e`): the real gateway driven through headless Chromium
 * (Debian's `chromium` package, /usr/bin/chromium, or CHROMIUM_PATH) with playwright-core.
 * Kept out of `npm test` (their files end in .e2e.ts, which its testMatch does not select), so
 * a machine without Chromium still runs the rest.
 */
import base from './jest.config.js';

export default {
  ...base,
  testMatch: ['<rootDir>/test/e2e/**/*.e2e.ts'],
  // Builds dist/ and the pages' bundles (dist/web) that the gateway serves.
  globalSetup: '<rootDir>/test/e2e/global-setup.ts',
  testTimeout: 60000,
};
