/** Jest runs the TypeScript sources as ESM through SWC (decorators + metadata); `npm run typecheck` type-checks them. */
export default {
  // Node's environment plus one embedded PostgreSQL per worker (a process of its own), reset between files (see the file).
  testEnvironment: '<rootDir>/test/helpers/environment.js',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  setupFiles: ['<rootDir>/test/helpers/setup-env.ts'],
  // Builds dist/ and prepares the migrated embedded database once per run (see the file).
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.js',
  // A worker whose heap passed this after a file is replaced by a fresh one: Jest's ESM module
  // registry keeps every file's modules (~30 MB a file, jestjs/jest#14605), so without it a worker
  // grows to ~1.8 GB. Jest measures the heap; the process is ~250 MB more, and a file adds its
  // own, so 300 MB keeps a worker under 1 GB resident. Its database lives in its own process,
  // so a new worker finds it loaded.
  workerIdleMemoryLimit: '300MB',
  // Generous: a deadline for a busy 2-core machine, never an assertion about speed.
  testTimeout: 180000,
  // Lists the skipped tests (with the reason their titles give) at the end of every run.
  reporters: ['default', '<rootDir>/test/helpers/skipped-reporter.js'],
};
