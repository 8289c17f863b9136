// A readable, line-per-difference comparison of an expected task with the stored one:
//   rec-1: status: expected "completed", got "ended"
//   rec-1: files[2] (name.mp4): missing
// Files are matched by name, not position. Fields the store adds beyond the expected task are ignored
// at the top level (the expectation names what must hold); inside nested values every key counts.
import type { FileView, Task } from '../../lib/domain/task.ts';
import { clip } from '../../lib/text.ts';

const MAX_VALUE_CHARS = 120;

function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value) ?? String(value);
  return clip(text, MAX_VALUE_CHARS);
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) if (!deepEqual(a[k], b[k])) return false;
    return true;
  }
  return false;
}

/** Appends one line per leaf that differs, naming it by its path. */
function diffValues(path: string, expected: unknown, actual: unknown, out: string[]): void {
  if (deepEqual(expected, actual)) return;
  if (isPlainObject(expected) && isPlainObject(actual)) {
    const keys = [...Object.keys(expected), ...Object.keys(actual).filter((k) => !(k in expected))];
    for (const k of keys) diffValues(`${path}.${k}`, expected[k], actual[k], out);
    return;
  }
  if (Array.isArray(expected) && Array.isArray(actual)) {
    for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
      diffValues(`${path}[${i}]`, expected[i], actual[i], out);
    }
    return;
  }
  out.push(`${path}: expected ${show(expected)}, got ${show(actual)}`);
}

function diffFiles(expected: readonly FileView[], actual: readonly FileView[], out: string[]): void {
  const byName = new Map(actual.map((f) => [f.fileName, f]));
  const expectedNames = new Set<string>();
  expected.forEach((file, i) => {
    expectedNames.add(file.fileName);
    const label = `files[${i}] (${file.fileName})`;
    const found = byName.get(file.fileName);
    if (!found) {
      out.push(`${label}: missing`);
      return;
    }
    for (const [key, value] of Object.entries(file)) {
      if (key !== 'fileName')
        diffValues(`${label}.${key}`, value, (found as unknown as Record<string, unknown>)[key], out);
    }
  });
  for (const file of actual) {
    if (!expectedNames.has(file.fileName))
      out.push(`files (${file.fileName}): unexpected, upload ${show(file.upload)}`);
  }
}

/** Every difference between the expected task and the stored one, each line prefixed with the task id. */
export function diffTask(expected: Task, actual: Task | null): string[] {
  if (actual === null) return [`${expected.id}: missing`];
  const lines: string[] = [];
  const stored = actual as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(expected)) {
    if (value === undefined || key === 'id') continue;
    if (key === 'files') {
      diffFiles(expected.files, Array.isArray(actual.files) ? actual.files : [], lines);
      continue;
    }
    diffValues(key, value, stored[key], lines);
  }
  return lines.map((line) => `${expected.id}: ${line}`);
}
