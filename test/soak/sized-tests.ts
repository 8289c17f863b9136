// `npm run soak -- --sized-tests`: the tests of `npm test` that run a case smaller than the platform makes it
// (test/support/size.ts), run again at full size: a failed write at every position of a run rather than at
// every few, a day of retries every 10 s of one image (8,640 failed uploads) rather than 300, as many
// generated runs of the property tests as they had before npm test ran fewer. The files are those that
// import test/support/size.ts, found here, so that a new one is never left out. Resolves to jest's exit code.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;

/** The test files that import the size helper, relative to the root. */
export function sizedTestFiles(dirs = ['lib', 'test'].map((dir) => join(root, dir))): string[] {
  return dirs
    .flatMap((dir) =>
      readdirSync(dir, { recursive: true, encoding: 'utf8' })
        .filter((file) => file.endsWith('.test.ts'))
        .map((file) => join(dir, file)),
    )
    .filter((path) => /from '(\.\.?\/)+(test\/)?support\/size\.ts'/.test(readFileSync(path, 'utf8')))
    .map((path) => relative(root, path))
    .sort();
}

export function runSizedTests(say: (line: string) => void): Promise<number> {
  const files = sizedTestFiles();
  say(`sized tests at full size: ${files.length} test files (${files.join(', ')}), one at a time`);
  const child = spawn(
    process.execPath,
    [
      '--experimental-vm-modules',
      join(root, 'node_modules/jest/bin/jest.js'),
      '--runInBand',
      // A full-size case runs for many minutes: the soak's own deadline is the limit, not jest's per test.
      '--testTimeout=3600000',
      ...files,
    ],
    { cwd: root, env: { ...process.env, CALLBACKS_FULL_SIZE: '1' }, stdio: 'inherit' },
  );
  return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
}
