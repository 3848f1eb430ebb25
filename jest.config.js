/** Jest runs the TypeScript sources as ESM through SWC (decorators + metadata); `npm run typecheck` type-checks them. */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  setupFiles: ['<rootDir>/test/helpers/setup-env.ts'],
  // Builds dist/ once per run: the CLI and process-level tests spawn the compiled code.
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  testTimeout: 30000,
};
