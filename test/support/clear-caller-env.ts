// Run by jest before each test file (setupFiles): the caller's settings leave this process's environment, so
// that a stack or a command a test runs here reads none of them (test/support/caller-env.ts).
import { isCallerSetting } from './caller-env.ts';

for (const name of Object.keys(process.env)) if (isCallerSetting(name)) delete process.env[name];
