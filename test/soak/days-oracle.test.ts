// The days part's brute force (./days-oracle.ts) on hand-made timelines of one screenshot task, its moments worked
// out here from the contract's numbers: a stall of 15 minutes (slicesSec 10: 3 × 10 s is under the minimum), a
// settle 10 minutes after a change (its minute rounded up), a warning 2 hours before purgeAt, a loss at purgeAt.
import { readFileSync } from 'node:fs';
import { defaultTimeSettings } from '../../lib/domain/deadlines.ts';
import { mustParse } from '../support/lifecycles.ts';
import { type AppliedCallback, certaintyOf, expectedTaskAt, taskFactsAt } from './days-oracle.ts';

type Body = Record<string, any>;
const fixture = (name: string): Body =>
  JSON.parse(readFileSync(new URL(`../fixtures/${name}.json`, import.meta.url), 'utf8')) as Body;
const MIN = 60_000;
const HOUR = 60 * MIN;
const LAG_MS = 16 * MIN;
const LAG = { lagMs: LAG_MS };
const S = { ...defaultTimeSettings, ...LAG };
const T0 = fixture('screenshot-1-start').timestamp as number;

const at = (body: Body, receivedAt: number): AppliedCallback => ({ cb: mustParse('screenshot', body), at: receivedAt });
const start = (): Body => fixture('screenshot-1-start');
const end = (ts: number): Body => ({ ...fixture('screenshot-3-end'), timestamp: ts });
const upload = (ts: number, n: number, ok: boolean): Body => {
  const body = fixture(ok ? 'screenshot-4-upload-ok' : 'screenshot-4-upload-failed');
  return { ...body, timestamp: ts, output: { ...body.output, fileName: `f-${n}.jpg` } };
};

test('a fact is certain once it held a lag long, possible before, impossible when it never held', () => {
  expect(certaintyOf({ from: 100, to: null }, 100 + LAG_MS, LAG)).toBe('must');
  expect(certaintyOf({ from: 100, to: null }, 100 + LAG_MS - 1, LAG)).toBe('may');
  expect(certaintyOf({ from: 100, to: 100 + LAG_MS - 1 }, 10 * LAG_MS, LAG)).toBe('may');
  expect(certaintyOf({ from: 100, to: 100 + LAG_MS }, 10 * LAG_MS, LAG)).toBe('must');
  expect(certaintyOf({ from: 100, to: null }, 99, LAG)).toBe('not');
  expect(certaintyOf(undefined, 99, LAG)).toBe('not');
});

test('a fact whose moment falls in a sweeper outage, or a lag before it, is certain a lag after the outage', () => {
  const outage = { from: 10 * HOUR, to: 16 * HOUR };
  const lag = { lagMs: LAG_MS, outages: [outage] };
  expect(certaintyOf({ from: 11 * HOUR, to: 15 * HOUR }, 20 * HOUR, lag)).toBe('may');
  expect(certaintyOf({ from: 11 * HOUR, to: null }, 16 * HOUR + LAG_MS - 1, lag)).toBe('may');
  expect(certaintyOf({ from: 11 * HOUR, to: null }, 16 * HOUR + LAG_MS, lag)).toBe('must');
  expect(certaintyOf({ from: 10 * HOUR - LAG_MS, to: 16 * HOUR + MIN }, 20 * HOUR, lag)).toBe('may');
  // Before the outage by more than a lag, or after it: found as ever.
  expect(certaintyOf({ from: 9 * HOUR, to: 10 * HOUR }, 20 * HOUR, lag)).toBe('must');
  expect(certaintyOf({ from: 16 * HOUR, to: 16 * HOUR + LAG_MS }, 20 * HOUR, lag)).toBe('must');
});

test('a late callback older than the latest leaves a stall as it was; a newer one ends it', () => {
  const latest = T0 + MIN;
  const applied = [
    at(start(), T0 + 1000),
    at(upload(latest, 1, true), latest + 1000),
    // Delivered an hour late, older than the latest: the stall's moment stays.
    at(upload(T0 + 30_000, 2, true), latest + HOUR),
    at(upload(latest + 2 * HOUR, 3, true), latest + 2 * HOUR + 1000),
  ];
  const stalledSince = latest + 15 * MIN;
  const during = taskFactsAt(applied, latest + 90 * MIN, S);
  expect([...during.stalls]).toEqual([[stalledSince, { from: stalledSince, to: null }]]);
  const after = taskFactsAt(applied, latest + 3 * HOUR, S);
  expect(after.stalls.get(stalledSince)).toEqual({ from: stalledSince, to: latest + 2 * HOUR + 1000 });
  // Stalled again 15 minutes after the newer callback, from that moment.
  const again = latest + 2 * HOUR + 15 * MIN;
  expect(after.stalls.get(again)).toEqual({ from: again, to: null });
  const task = expectedTaskAt(after, null, latest + 3 * HOUR, LAG)!;
  expect(task.stalledSince).toBe(again);
});

test('a completed task settles after each change; the next change ends that settle', () => {
  const applied = [
    at(start(), T0 + 1000),
    at(upload(T0 + 20_000, 1, true), T0 + 21_000),
    at(end(T0 + 30_000), T0 + 31_000),
    // A new callback an hour later changes the task: a second settle.
    at(upload(T0 + 25_000, 2, true), T0 + HOUR),
  ];
  const facts = taskFactsAt(applied, T0 + 2 * HOUR, S);
  const first = Math.ceil((T0 + 31_000) / MIN) * MIN + 10 * MIN;
  const second = Math.ceil((T0 + HOUR) / MIN) * MIN + 10 * MIN;
  expect([...facts.settles]).toEqual([
    [first, { from: first, to: T0 + HOUR }],
    [second, { from: second, to: null }],
  ]);
  expect(facts.stalls.size).toBe(0);
  // Within the lag of the second settle, the stored task may or may not hold it.
  const soon = taskFactsAt(applied, second + MIN, S);
  expect(expectedTaskAt(soon, null, second + MIN, LAG)!.settledAt).toBeNull();
  expect(expectedTaskAt(soon, { settledAt: second } as never, second + MIN, LAG)!.settledAt).toBe(second);
});

test('a failed file is warned about 2 hours before its purgeAt and lost at it, unless a success wins first', () => {
  const failedAt = T0 + 20_000;
  const purgeAt = failedAt + 24 * HOUR;
  const applied = [
    at(start(), T0 + 1000),
    at(upload(failedAt, 1, false), failedAt + 1000),
    at(upload(failedAt + 1000, 2, false), failedAt + 2000),
    at(end(T0 + 60_000), T0 + 61_000),
    // File 2 recovers an hour after its warning.
    at(upload(failedAt + 23 * HOUR, 2, true), failedAt + 23 * HOUR),
  ];
  const now = purgeAt + HOUR;
  const facts = taskFactsAt(applied, now, S);
  expect(facts.warnings.get('f-1.jpg')).toEqual([{ from: purgeAt - 2 * HOUR, to: null }]);
  expect(facts.losses.get('f-1.jpg')).toEqual([{ from: purgeAt, to: null }]);
  expect(facts.warnings.get('f-2.jpg')).toEqual([{ from: purgeAt + 1000 - 2 * HOUR, to: failedAt + 23 * HOUR }]);
  expect(facts.losses.get('f-2.jpg')).toBeUndefined();
  const task = expectedTaskAt(facts, null, now, LAG)!;
  expect(task.files.map((f) => [f.fileName, f.upload])).toEqual([
    ['f-1.jpg', 'lost'],
    ['f-2.jpg', 'uploaded'],
  ]);
});
