/** Jest runs the TypeScript sources as ESM through SWC (decorators + metadata); `npm run typecheck` type-checks them. */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  setupFiles: ['<rootDir>/test/helpers/setup-env.ts'],
  testTimeout: 30000,
};
