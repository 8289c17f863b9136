// Lines of at most 120 characters in code and configuration: the formatter wraps code, but not strings,
// comments or YAML, so this catches what it leaves long. Markdown and data files are not checked.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const MAX = 120;
const checked = /\.(ts|js|mjs|cjs|yml|yaml)$/;
const skipped = [/^test\/fixtures\//, /^bench\/results\.json$/];

const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { encoding: 'utf8' })
  .split('\n')
  .filter((f) => checked.test(f) && !skipped.some((s) => s.test(f)));

const long = [];
for (const file of files) {
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    continue; // listed by git but deleted in the work tree
  }
  text.split('\n').forEach((line, i) => {
    if (line.length > MAX) long.push(`${file}:${i + 1}: ${line.length} characters`);
  });
}
if (long.length) {
  console.error(`${long.length} line(s) longer than ${MAX} characters:\n${long.join('\n')}`);
  process.exit(1);
}
console.log(`${files.length} files, no line longer than ${MAX} characters`);
