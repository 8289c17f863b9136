// `callbacks verify` on the facts of time: a run with tasks whose uploads fail for good and tasks that stop
// mid-way, checked at a clock against stores that hold the right and the wrong states, and against the events
// a receiver publishes. Each expectation below is worked out by hand from the callbacks, not by the module.
import type { Task } from '../../lib/domain/task.ts';
import { expectedTasks } from '../emulator/expect.ts';
import { generateRun } from '../emulator/lifecycles.ts';
import {
  atClock,
  checkTimeEvents,
  DEFAULT_CLOCK_SETTINGS,
  type ClockExpectation,
  type PublishedTimeEvent,
} from './time-facts.ts';
import { verifyTasks } from './verify.ts';

const BASE = 1_763_798_400_000;
const DAY = 86_400_000;
const MIN = 60_000;
const run = generateRun({
  seed: 5,
  recordings: 10,
  screenshots: 6,
  appKey: 'demo-app',
  compress: 3600,
  baseTime: BASE,
  lose: 0.5,
  stall: 0.5,
});
const expected = expectedTasks(run.sends.map((s) => ({ ...s, delivered: true })));
const clockAt = (nowMs: number): ClockExpectation => ({ ...DEFAULT_CLOCK_SETTINGS, nowMs });
const later = clockAt(BASE + 10 * DAY);

const failedFiles = expected.flatMap((t) => t.files.filter((f) => f.upload === 'failed').map((f) => ({ t, f })));
const open = expected.filter((t) => t.endedAt === null && t.status !== 'failed');

/** The stall moment by hand: latest callback + 3 × slices (minutes or seconds), at least 15 minutes. */
function stallByHand(t: Task): number {
  const slices = Number(t.config?.[t.service === 'recording' ? 'slicesMin' : 'slicesSec']);
  const interval = slices * (t.service === 'recording' ? MIN : 1000);
  return t.updatedAt! + Math.max(15 * MIN, 3 * interval);
}

/** The receiver's state after every sweep: failed files lost, open tasks stalled. */
const swept = (t: Task): Task => ({
  ...structuredClone(t),
  files: t.files.map((f) => (f.upload === 'failed' ? { ...f, upload: 'lost' } : f)),
  stalledSince: open.includes(t) ? stallByHand(t) : null,
});

const check = (tasks: readonly Task[], clock: ClockExpectation) => {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  return verifyTasks({
    expected,
    getTask: async (id) => structuredClone(byId.get(id) ?? null),
    expectAt: (e, actual) => atClock(e, actual, clock),
    timeoutMs: 0,
  });
};

test('the run has both kinds of task', () => {
  expect(failedFiles.length).toBeGreaterThan(3);
  expect(open.length).toBeGreaterThan(3);
  for (const { f } of failedFiles) expect(f.purgeAt).toBeGreaterThan(BASE);
});

test('long after the run: the swept state matches; the unswept one differs in every lost file and stall', async () => {
  expect(await check(expected.map(swept), later)).toMatchObject({ ok: true, matched: expected.length });
  const unswept = await check(expected, later);
  expect(unswept.ok).toBe(false);
  const lines = unswept.diffs.flatMap((d) => d.lines).join('\n');
  for (const { f } of failedFiles) expect(lines).toContain(f.fileName);
  for (const t of open) expect(lines).toContain(String(stallByHand(t)));
});

test('a stall at the wrong moment, or a lost file before its purge time, is a difference', async () => {
  const t = open[0]!;
  const wrongStall = expected.map(swept).map((x) => (x.id === t.id ? { ...x, stalledSince: stallByHand(t) + 1 } : x));
  expect((await check(wrongStall, later)).diffs.map((d) => d.id)).toEqual([t.id]);
  // Before any file's purge and any stall: nothing may be lost or stalled yet.
  const early = clockAt(BASE);
  expect((await check(expected, early)).ok).toBe(true);
  const { t: owner } = failedFiles[0]!;
  const tooSoon = expected.map((x) => (x.id === owner.id ? swept(x) : x));
  expect((await check(tooSoon, early)).diffs.map((d) => d.id)).toContain(owner.id);
});

test('within a sweep of its moment, a fact may be found or not yet', async () => {
  const { t, f } = failedFiles[0]!;
  const justAfter = clockAt(f.purgeAt! + 2 * MIN);
  const found = expected.map((x) =>
    x.id === t.id
      ? { ...x, files: x.files.map((g) => (g.fileName === f.fileName ? { ...g, upload: 'lost' as const } : g)) }
      : x,
  );
  const results = await Promise.all([check(expected, justAfter), check(found, justAfter)]);
  for (const r of results) expect(r.diffs.map((d) => d.id)).not.toContain(t.id);
});

/** The events a receiver publishes once it has swept everything. */
function sweptEvents(): PublishedTimeEvent[] {
  const events: PublishedTimeEvent[] = [];
  for (const { t, f } of failedFiles) {
    for (const type of ['file.purge_warning', 'file.lost'])
      events.push({
        id: `${type}-${f.fileName}`,
        type,
        task: { id: t.id },
        file: { fileName: f.fileName, purgeAt: f.purgeAt },
      });
  }
  for (const t of open)
    events.push({
      id: `stalled-${t.id}`,
      type: 'task.stalled',
      task: { id: t.id },
      stall: { stalledSince: stallByHand(t) },
    });
  return events;
}

test('events: each fact that must be held published, none before its moment', () => {
  expect(checkTimeEvents(expected, sweptEvents(), later)).toEqual({ ok: true, missing: [], unexpected: [] });
  const withoutOne = sweptEvents().filter((e) => e.type !== 'task.stalled' || e.task!.id !== open[0]!.id);
  expect(checkTimeEvents(expected, withoutOne, later)).toMatchObject({
    ok: false,
    missing: [`task.stalled of ${open[0]!.id} at ${stallByHand(open[0]!)}`],
  });
  const early = checkTimeEvents(expected, sweptEvents(), clockAt(BASE));
  expect(early.ok).toBe(false);
  expect(early.unexpected.length).toBe(sweptEvents().length);
  // A stall at a moment other than the one that must be held does not stand for it.
  const moved = sweptEvents().map((e) =>
    e.type === 'task.stalled' && e.task!.id === open[0]!.id ? { ...e, stall: { stalledSince: BASE } } : e,
  );
  expect(checkTimeEvents(expected, moved, later).missing).toEqual([
    `task.stalled of ${open[0]!.id} at ${stallByHand(open[0]!)}`,
  ]);
});
