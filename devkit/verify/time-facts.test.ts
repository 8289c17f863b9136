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
  differsInTimeOnly,
  type ClockExpectation,
  type PublishedTimeEvent,
} from './time-facts.ts';
import { verifyEvents } from './events.ts';
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
  counts: { ...t.counts, lost: t.counts.failed },
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
      ? {
          ...x,
          counts: { ...x.counts, lost: 1 },
          files: x.files.map((g) => (g.fileName === f.fileName ? { ...g, upload: 'lost' as const } : g)),
        }
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
  expect(checkTimeEvents(expected, sweptEvents(), later)).toEqual({
    ok: true,
    missing: [],
    unexpected: [],
    doubled: [],
  });
  const withoutOne = sweptEvents().filter((e) => e.type !== 'task.stalled' || e.task!.id !== open[0]!.id);
  expect(checkTimeEvents(expected, withoutOne, later)).toMatchObject({
    ok: false,
    missing: [`task.stalled of ${open[0]!.id} at ${stallByHand(open[0]!)}`],
  });
  const early = checkTimeEvents(expected, sweptEvents(), clockAt(BASE));
  expect(early.ok).toBe(false);
  expect(early.unexpected.length).toBe(sweptEvents().length);
  // A stall at a moment other than the one that must be held does not stand for it (and, ended, wants a resume).
  const moved = sweptEvents().map((e) =>
    e.type === 'task.stalled' && e.task!.id === open[0]!.id ? { ...e, stall: { stalledSince: BASE } } : e,
  );
  expect(checkTimeEvents(expected, moved, later).missing).toEqual([
    `task.stalled of ${open[0]!.id} at ${stallByHand(open[0]!)}`,
    `task.resumed of ${open[0]!.id} at ${BASE}`,
  ]);
});

// Settles and resumes: the run ended a day after BASE; ten days later every completed task must be settled.
const runEnd = BASE + DAY;
const settledClock: ClockExpectation = { ...later, runEndedAt: runEnd };
const completed = expected.filter((t) => t.status === 'completed');

/** A settle event as the receiver publishes it: its id, and the settledAt it carries. */
const settledEvent = (t: Task, id = `settled-${t.id}`): PublishedTimeEvent => ({
  id,
  type: 'task.settled',
  task: { id: t.id },
  settledAt: runEnd + 10 * MIN,
});

test('events: each completed task settled once, with its settledAt, once the run is SETTLE_AFTER past', async () => {
  expect(completed.length).toBeGreaterThan(2);
  const all = [...sweptEvents(), ...completed.map((t) => settledEvent(t))];
  expect(checkTimeEvents(expected, all, settledClock)).toEqual({ ok: true, missing: [], unexpected: [], doubled: [] });
  // A settle missing.
  const t = completed[0]!;
  const without = all.filter((e) => !(e.type === 'task.settled' && e.task!.id === t.id));
  expect(checkTimeEvents(expected, without, settledClock)).toMatchObject({
    ok: false,
    missing: [`task.settled of ${t.id}`],
  });
  // One settle received twice: listed, and allowed (delivery is at least once).
  const twice = checkTimeEvents(expected, [...all, settledEvent(t)], settledClock);
  expect(twice).toMatchObject({
    ok: true,
    missing: [],
    unexpected: [],
    doubled: [`task.settled of ${t.id} (settled-${t.id}) ×2`],
  });
  // Without settledAt, or of a task that is not completed: not a settle.
  const bare = all.map((e) => (e.type === 'task.settled' && e.task!.id === t.id ? { ...e, settledAt: undefined } : e));
  expect(checkTimeEvents(expected, bare, settledClock)).toMatchObject({
    ok: false,
    missing: [`task.settled of ${t.id}`],
    unexpected: [`task.settled of ${t.id} (settled-${t.id})`],
  });
  const notCompleted = open[0]!;
  const wrong = checkTimeEvents(expected, [...all, settledEvent(notCompleted)], settledClock);
  expect(wrong.unexpected).toEqual([`task.settled of ${notCompleted.id} (settled-${notCompleted.id})`]);
  // Within SETTLE_AFTER and the sweep lag of the run's end a settle may be out or not; without the run's end, too.
  const soon = { ...settledClock, nowMs: runEnd + 15 * MIN };
  expect(checkTimeEvents(expected, sweptEvents(), { ...later, runEndedAt: undefined }).ok).toBe(true);
  expect(checkTimeEvents(expected, [], soon).missing.filter((m) => m.startsWith('task.settled'))).toEqual([]);
  // The stored task too: a completed task that must be settled by now without settledAt differs.
  const tasks = expected.map(swept);
  const unsettled = await check(tasks, settledClock);
  expect(unsettled.diffs.map((d) => d.id).sort()).toEqual(completed.map((x) => x.id).sort());
  const settledTasks = tasks.map((x) => (x.status === 'completed' ? { ...x, settledAt: runEnd + 10 * MIN + 7 } : x));
  expect((await check(settledTasks, settledClock)).ok).toBe(true);
});

test('events: a stall the later callbacks ended is resumed once, and only a stall published is', () => {
  const t = open[0]!;
  const earlier = stallByHand(t) - 3_600_000;
  const stall = (since: number, id = `stalled-${t.id}-${since}`): PublishedTimeEvent => ({
    id,
    type: 'task.stalled',
    task: { id: t.id },
    stall: { stalledSince: since },
  });
  const resume = (since: number, id = `resumed-${t.id}-${since}`): PublishedTimeEvent => ({
    id,
    type: 'task.resumed',
    task: { id: t.id },
    stall: { stalledSince: since, lastCallbackAt: t.updatedAt! },
  });
  const all = [...sweptEvents(), stall(earlier), resume(earlier)];
  expect(checkTimeEvents(expected, all, later)).toEqual({ ok: true, missing: [], unexpected: [], doubled: [] });
  // The stall's resume missing.
  expect(checkTimeEvents(expected, all.slice(0, -1), later)).toMatchObject({
    ok: false,
    missing: [`task.resumed of ${t.id} at ${earlier}`],
  });
  // Received twice, the resume or the stall: listed, and allowed.
  expect(checkTimeEvents(expected, [...all, resume(earlier)], later)).toMatchObject({
    ok: true,
    doubled: [`task.resumed of ${t.id} (resumed-${t.id}-${earlier}) ×2`],
  });
  expect(checkTimeEvents(expected, [...all, stall(earlier)], later).doubled).toEqual([
    `task.stalled of ${t.id} (stalled-${t.id}-${earlier}) ×2`,
  ]);
  // A resume of a stall never published, or of the stall the task is still in.
  const orphan = checkTimeEvents(expected, [...sweptEvents(), resume(earlier)], later);
  expect(orphan.unexpected).toEqual([`task.resumed of ${t.id} (resumed-${t.id}-${earlier})`]);
  const current = checkTimeEvents(expected, [...sweptEvents(), resume(stallByHand(t))], later);
  expect(current.unexpected).toEqual([`task.resumed of ${t.id} (resumed-${t.id}-${stallByHand(t)})`]);
});

test('a verify run of the events fails on a settle or a resume missing or doubled, and passes otherwise', async () => {
  const t = open[0]!;
  const earlier = stallByHand(t) - 3_600_000;
  const stall = { stalledSince: earlier, lastCallbackAt: t.updatedAt! };
  const good: PublishedTimeEvent[] = [
    ...sweptEvents(),
    ...completed.map((x) => settledEvent(x)),
    { id: 'stalled-earlier', type: 'task.stalled', task: { id: t.id }, stall },
    { id: 'resumed-earlier', type: 'task.resumed', task: { id: t.id }, stall },
  ];
  const run = (events: PublishedTimeEvent[]) => {
    const batches = [events];
    return verifyEvents({
      expected: { tasks: [], must: [], may: [] },
      poll: async () => batches.shift() ?? [],
      time: (published) => checkTimeEvents(expected, published, settledClock),
      timeoutMs: 0,
    });
  };
  expect(await run(good)).toMatchObject({ ok: true });
  for (const type of ['task.settled', 'task.resumed']) {
    const first = good.findIndex((e) => e.type === type);
    const without = await run(good.filter((_, i) => i !== first));
    expect([type, without.ok, without.time!.missing.length]).toEqual([type, false, 1]);
    const twice = await run([...good, good[first]!]);
    expect([type, twice.ok, twice.time!.doubled.length]).toEqual([type, true, 1]);
  }
});

test('right after an outage run sent in the past, a fact long due is not expected before a sweep came', async () => {
  // The run's files were given up a day before it was sent: their purge times passed long before the receiver had
  // them, and it finds them lost within a sweep of receiving them, not of their purge time.
  const runEndedAt = BASE + 10 * DAY;
  const rightAfter: ClockExpectation = { ...clockAt(runEndedAt + 2 * MIN), runEndedAt };
  const unswept = await check(expected, rightAfter);
  expect(unswept.diffs.filter((d) => failedFiles.some(({ t }) => t.id === d.id))).toEqual([]);
  expect(checkTimeEvents(expected, [], rightAfter).missing.filter((m) => m.startsWith('file.lost'))).toEqual([]);
  // A sweep after the run, they must be there.
  const sweptBy: ClockExpectation = { ...rightAfter, nowMs: runEndedAt + DEFAULT_CLOCK_SETTINGS.lagMs + MIN };
  const late = await check(expected, sweptBy);
  for (const { t } of failedFiles) expect(late.diffs.map((d) => d.id)).toContain(t.id);
  expect((await check(expected.map(swept), sweptBy)).ok).toBe(true);
});

test('a task that differs in its facts of time alone is told apart from one that differs otherwise', () => {
  const t = failedFiles[0]!.t;
  expect(differsInTimeOnly(swept(t), t)).toBe(true);
  expect(differsInTimeOnly(t, { ...swept(t), settledAt: BASE })).toBe(true);
  expect(differsInTimeOnly(t, { ...t, status: 'completed' })).toBe(false);
  expect(differsInTimeOnly(t, null)).toBe(false);
});
