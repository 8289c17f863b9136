// Jest runs the TypeScript sources as native ES modules (fauxqs is ESM-only), transformed by swc.
// Type-checking is a separate step (`npm run typecheck`).
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2023' },
        module: { type: 'es6' },
      },
    ],
  },
  testMatch: ['<rootDir>/{lib,devkit,functions,cli,test,infra}/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/', '/.serverless/'],
  testTimeout: 60000,
  // Every core: most files spend much of their time waiting on emulators and sockets, so one worker per core
  // keeps both busy (jest's default leaves one core out).
  maxWorkers: '100%',
  // The packaged CloudFormation template the local stack is built from, packaged once for the whole run.
  globalSetup: '<rootDir>/test/support/global-setup.mjs',
  // Each test file runs without the settings of the caller's shell (CALLBACK_SECRETS, AWS_*, ...).
  setupFiles: ['<rootDir>/test/support/clear-caller-env.ts'],
};
