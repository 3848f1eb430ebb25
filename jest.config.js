/** Jest runs the TypeScript sources as ESM through SWC (decorators + metadata); `npm run typecheck` type-checks them. */
export default {
  // Node's environment plus one embedded PostgreSQL per worker, reset between files (see the file).
  testEnvironment: '<rootDir>/test/helpers/environment.js',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  setupFiles: ['<rootDir>/test/helpers/setup-env.ts'],
  // Builds dist/ and prepares the migrated embedded database once per run (see the file).
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.js',
  // Generous: a deadline for a busy 2-core machine, never an assertion about speed.
  testTimeout: 180000,
  // Lists the skipped tests (with the reason their titles give) at the end of every run.
  reporters: ['default', '<rootDir>/test/helpers/skipped-reporter.js'],
};
