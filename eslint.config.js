import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**', 'tmp/**', '.artefacts/**', 'coverage/**', 'clients/*/dist/**', 'clients/*/src/generated/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  { files: ['bin/**', 'bench/**', 'src/cli/**', 'examples/**'], rules: { 'no-console': 'off' } },
  // Browser code of the sandbox pages (bundled by src/sandbox/build-web.mjs).
  { files: ['src/sandbox/web/**'], languageOptions: { globals: { ...globals.browser } } },
  // Tests read loosely typed JSON bodies.
  { files: ['test/**'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
);
