import type { Task } from '../../lib/domain/task.ts';
import { expectedTasks } from '../emulator/expect.ts';
import { generateRun } from '../emulator/lifecycles.ts';
import { verifyTasks, type VerifyRound } from './verify.ts';

const run = generateRun({
  seed: 3,
  recordings: 5,
  screenshots: 3,
  appKey: 'demo-app',
  compress: 3600,
  baseTime: 1_763_798_400_000,
});
const expected = expectedTasks(run.sends.map((s) => ({ ...s, delivered: true })));
const stale = (t: Task): Task => ({
  ...t,
  status: t.service === 'recording' ? 'recording' : 'capturing',
  eventCount: 1,
  files: [],
});

/** An in-memory store that catches up with the expectation after `lag` reads of each task. */
function laggingStore(lag: number, tasks: readonly Task[] = expected) {
  const reads = new Map<string, number>();
  const byId = new Map(tasks.map((t) => [t.id, t]));
  return {
    reads,
    async getTask(id: string): Promise<Task | null> {
      const n = (reads.get(id) ?? 0) + 1;
      reads.set(id, n);
      const task = byId.get(id);
      if (!task) return null;
      return n > lag ? structuredClone(task) : n === 1 ? null : stale(task);
    },
  };
}

test('waits for the queue to drain and re-reads mismatching tasks until they match', async () => {
  const store = laggingStore(3);
  let probes = 0;
  const rounds: VerifyRound[] = [];
  const result = await verifyTasks({
    expected,
    getTask: (id) => store.getTask(id),
    waitForDrain: async () => ++probes >= 2,
    timeoutMs: 30_000,
    pollIntervalMs: 1,
    onRound: (r) => rounds.push(r),
  });
  expect(result).toMatchObject({
    ok: true,
    checked: expected.length,
    matched: expected.length,
    diffs: [],
    drained: true,
    timedOut: false,
    rounds: 4,
  });
  expect(rounds.map((r) => r.matched)).toEqual([0, 0, 0, expected.length]);
  // A matching task is not read again.
  expect([...store.reads.values()].every((n) => n === 4)).toBe(true);
});

test('without a drain probe it polls the tasks only', async () => {
  const result = await verifyTasks({
    expected,
    getTask: laggingStore(1).getTask,
    timeoutMs: 30_000,
    pollIntervalMs: 1,
  });
  expect(result).toMatchObject({ ok: true, drained: null, rounds: 2 });
});

test('times out with a diff of what still differs or is missing', async () => {
  const broken = structuredClone(expected);
  const victim = broken.find((t) => t.files.length > 0)!;
  victim.files[0]!.upload = 'failed';
  const gone = broken.find((t) => t !== victim)!;
  const store = laggingStore(
    0,
    broken.filter((t) => t !== gone),
  );
  const result = await verifyTasks({
    expected,
    getTask: store.getTask,
    waitForDrain: async () => false,
    timeoutMs: 50,
    pollIntervalMs: 5,
  });
  expect(result.ok).toBe(false);
  expect(result.timedOut).toBe(true);
  expect(result.drained).toBe(false);
  expect(result.matched).toBe(expected.length - 2);
  const lines = result.diffs.flatMap((d) => d.lines);
  expect(lines).toContain(`${gone.id}: missing`);
  expect(lines).toContain(
    `${victim.id}: files[0] (${victim.files[0]!.fileName}).upload: expected "uploaded", got "failed"`,
  );
  expect(result.diffs.map((d) => d.id).sort()).toEqual([gone.id, victim.id].sort());
});

test('stops before the time-out once the queue has stayed drained and tasks still differ', async () => {
  const store = laggingStore(Infinity);
  const result = await verifyTasks({
    expected,
    getTask: store.getTask,
    waitForDrain: async () => true,
    timeoutMs: 60_000,
    pollIntervalMs: 1,
    settleMs: 5,
  });
  expect(result).toMatchObject({ ok: false, timedOut: false, drained: true, matched: 0 });
});

test('a read that fails is a difference to re-check, not a crash', async () => {
  let calls = 0;
  const result = await verifyTasks({
    expected: expected.slice(0, 1),
    getTask: async (id) => {
      if (++calls === 1) throw new Error('throttled');
      return expected.find((t) => t.id === id)!;
    },
    timeoutMs: 30_000,
    pollIntervalMs: 1,
  });
  expect(result).toMatchObject({ ok: true, rounds: 2 });
  const failing = await verifyTasks({
    expected: expected.slice(0, 1),
    getTask: async () => {
      throw new Error('no table');
    },
    timeoutMs: 0,
  });
  expect(failing.diffs[0]!.lines).toEqual([`${expected[0]!.id}: could not be read (no table)`]);
});

test('facts of time alone differing are waited for after the queue drained, until a sweep finds them', async () => {
  // The receiver's sweep finds the task lost some reads after the queue drained: verify failed right after an
  // outage run and passed minutes later, unchanged.
  const [first] = expected;
  const lost: Task = { ...first!, stalledSince: 1 };
  const reads = { n: 0 };
  const result = await verifyTasks({
    expected: [lost],
    getTask: async () => (++reads.n > 3 ? structuredClone(lost) : { ...structuredClone(first!), stalledSince: null }),
    waitForDrain: async () => true,
    timeoutMs: 30_000,
    pollIntervalMs: 1,
    settleMs: 0,
    differsInTimeOnly: () => true,
  });
  expect(result).toMatchObject({ ok: true, rounds: 4 });
  // Another difference is final once the queue has drained.
  const other = await verifyTasks({
    expected: [lost],
    getTask: async () => ({ ...structuredClone(lost), eventCount: 0 }),
    waitForDrain: async () => true,
    timeoutMs: 30_000,
    pollIntervalMs: 1,
    settleMs: 0,
    differsInTimeOnly: () => false,
  });
  expect(other).toMatchObject({ ok: false, rounds: 1, diffs: [{ id: first!.id, timeOnly: false }] });
});
