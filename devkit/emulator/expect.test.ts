import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectedTasks, readExpectFile, writeExpectFile } from './expect.ts';
import { generateRun } from './lifecycles.ts';

const run = generateRun({
  seed: 5,
  recordings: 4,
  screenshots: 2,
  appKey: 'demo-app',
  compress: 3600,
  baseTime: 1_763_798_400_000,
  duplicates: 0.5,
  outage: 1,
  giveUp: 0.5,
});
let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'expect-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('the expectation is the fold of the distinct delivered bodies', () => {
  const all = expectedTasks(run.sends.map((s) => ({ ...s, delivered: true })));
  expect(all.map((t) => t.id).sort()).toEqual([...new Set(run.sends.map((s) => s.taskId))].sort());
  const distinct = new Set(run.sends.filter((s) => !s.duplicate).map((s) => JSON.stringify(s.body))).size;
  expect(all.reduce((n, t) => n + t.eventCount, 0)).toBe(distinct);

  // Dropping one task's start (and its duplicates) changes only that task.
  const start = run.sends.find((s) => s.body.type === 1)!;
  const partial = expectedTasks(
    run.sends.map((s) => ({ ...s, delivered: !(s.taskId === start.taskId && s.body.type === 1) })),
  );
  const before = all.find((t) => t.id === start.taskId)!;
  const after = partial.find((t) => t.id === start.taskId)!;
  expect(after.startedAt).toBeNull();
  expect(after.eventCount).toBe(before.eventCount - 1);
  expect(partial.filter((t) => t.id !== start.taskId)).toEqual(all.filter((t) => t.id !== start.taskId));
});

test('a body the domain rejects is an error, not a silent omission', () => {
  expect(() =>
    expectedTasks([{ service: 'screenshot', body: { type: 2, appKey: 'a', imageId: 'i' }, delivered: true }]),
  ).toThrow(/does not parse/);
});

test('write and read the expect file', async () => {
  const tasks = expectedTasks(run.sends.map((s) => ({ ...s, delivered: true })));
  const file = join(dir, 'expected.json');
  await writeExpectFile(file, tasks, new Date('2026-01-02T03:04:05Z'));
  const read = await readExpectFile(file);
  expect(read.generatedAt).toBe('2026-01-02T03:04:05.000Z');
  expect(read.tasks).toEqual(JSON.parse(JSON.stringify(tasks)));
});

test('a missing or malformed expect file says what is wrong', async () => {
  await expect(readExpectFile(join(dir, 'nope.json'))).rejects.toThrow(/does not exist/);
  const bad = join(dir, 'bad.json');
  await writeFile(bad, '{"tasks": [{"service": "recording"}]}');
  await expect(readExpectFile(bad)).rejects.toThrow(/each task with an id/);
  await writeFile(bad, 'not json');
  await expect(readExpectFile(bad)).rejects.toThrow(/not valid JSON/);
});
