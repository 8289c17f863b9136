// `npm test` passes whatever the caller's shell holds. It failed when the shell had CALLBACK_SECRETS set: a test
// started a local stack in its own process, which read them from the process's environment, and then ran the CLI
// with none against it. Every test file now runs without the caller's settings (test/support/caller-env.ts). Checked
// the way it failed: this file runs itself through jest with a shell full of such settings, and the run it starts
// (the probe) looks at what its process, a local stack it starts and a child's environment hold.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startLocalStack } from '../devkit/local/stack.ts';
import { setLogSink } from '../lib/log.ts';
import { isCallerSetting } from './support/caller-env.ts';
import { childEnv } from './support/cli-process.ts';
import { envReads } from './support/env-reads.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const PROBE = 'CALLER_ENVIRONMENT_PROBE';

/** What a developer's shell may hold, each different from what the tests assume. */
const callerShell = {
  CALLBACK_SECRETS: JSON.stringify({ 'demo-app': ['the-callers-own-secret'] }),
  SIGNATURE_MODE: 'report',
  ALLOWED_SOURCE_CIDRS: '192.0.2.0/24',
  TASKS_TABLE: 'the-callers-table',
  RAW_EVENT_TTL_DAYS: '1',
  LOG_LEVEL: 'debug',
  AWS_PROFILE: 'the-callers-profile',
  AWS_REGION: 'ap-south-1',
  AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
  NO_COLOR: '1',
};

if (process.env[PROBE] === '1') {
  test('probe: the caller settings reach neither this process, nor a stack started here, nor a child', async () => {
    expect(Object.keys(process.env).filter(isCallerSetting)).toEqual([]);
    expect(Object.keys(childEnv()).filter(isCallerSetting)).toEqual(['AWS_EC2_METADATA_DISABLED']);
    const cwd = mkdtempSync(join(tmpdir(), 'callbacks-caller-env-'));
    const restoreSink = setLogSink(() => {});
    const stack = await startLocalStack({ port: 0, memory: true, cwd, quiet: true });
    try {
      expect({ secrets: stack.secretsSource, mode: stack.signatureMode, sources: stack.allowedSources }).toEqual({
        secrets: 'default',
        mode: 'enforce',
        sources: [],
      });
    } finally {
      await stack.stop();
      setLogSink(restoreSink);
      rmSync(cwd, { recursive: true, force: true });
    }
  });
} else {
  test('npm test failed when the shell had CALLBACK_SECRETS set: no test sees the caller settings', async () => {
    // JEST_WORKER_ID would tell the inner jest it is one of this run's workers.
    const { JEST_WORKER_ID: _worker, ...env } = process.env;
    const run = await new Promise<{ code: number; output: string }>((resolve) => {
      execFile(
        process.execPath,
        [
          '--experimental-vm-modules',
          join(root, 'node_modules/jest/bin/jest.js'),
          '--runTestsByPath',
          fileURLToPath(import.meta.url),
          '--ci',
        ],
        { cwd: root, env: { ...env, ...callerShell, [PROBE]: '1' }, timeout: 120_000, maxBuffer: 16 << 20 },
        (err, stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, output: stdout + stderr }),
      );
    });
    expect(run.output).toMatch(/Tests: +1 passed, 1 total/);
    expect(run.code).toBe(0);
  }, 150_000);

  test('every variable the code reads is one of the caller settings each test file runs without', () => {
    const sources = ['bin', 'cli', 'devkit', 'functions', 'lib', 'scripts'].flatMap((dir) =>
      readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
        .filter((file) => /\.(ts|js|mjs|cjs)$/.test(file) && !/\.test\.ts$/.test(file))
        .map((file) => join(root, dir, file)),
    );
    const read = [...new Set(sources.flatMap((file) => envReads(file, { destructured: 'read' })))].sort();
    expect(read).toContain('CALLBACK_SECRETS');
    expect(read.filter((name) => !isCallerSetting(name))).toEqual([]);
  });
}
