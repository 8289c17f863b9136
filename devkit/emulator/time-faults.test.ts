// The emulator's faults of time: tasks whose uploads fail for good (`lose`) and tasks that stop mid-way (`stall`),
// checked on the bodies it sends (their types and timestamps), not on its plans.
import { parseCallback, type Callback } from '../../lib/domain/callback.ts';
import { canonicalJson } from '../../lib/domain/canonical.ts';
import { reduceTasks } from '../../lib/domain/reduce-task.ts';
import { FILE_HOLD_MS } from '../../lib/platform/delivery.ts';
import { generateRun, type LifecycleOptions } from './lifecycles.ts';

const base: LifecycleOptions = {
  seed: 11,
  recordings: 12,
  screenshots: 8,
  appKey: 'demo-app',
  compress: 3600,
  baseTime: 1_763_798_400_000,
};

const callbacks = (opts: LifecycleOptions): Callback[] =>
  generateRun(opts).sends.map((s) => {
    const r = parseCallback(s.service, s.body);
    if (!r.ok) throw new Error(r.errors.join('; '));
    return r.callback;
  });

const byTask = (cbs: readonly Callback[]) => {
  const out = new Map<string, Callback[]>();
  for (const cb of cbs) out.set(cb.id, [...(out.get(cb.id) ?? []), cb]);
  return out;
};

test('without the new rates, or at 0, a seed sends what it sent before', () => {
  const plain = generateRun(base).sends.map((s) => canonicalJson(s.body));
  expect(generateRun({ ...base, lose: 0, stall: 0 }).sends.map((s) => canonicalJson(s.body))).toEqual(plain);
});

test('lose: every upload of every file fails, the last 24 h after the first; every file ends failed', () => {
  const cbs = callbacks({ ...base, lose: 1 });
  const uploads = new Map<string, Callback[]>();
  for (const cb of cbs)
    if (cb.upload) uploads.set(cb.upload.fileName, [...(uploads.get(cb.upload.fileName) ?? []), cb]);
  expect(uploads.size).toBeGreaterThan(20);
  for (const attempts of uploads.values()) {
    expect(attempts.every((a) => a.upload!.ok === false)).toBe(true);
    const times = attempts.map((a) => a.timestamp).sort((a, b) => a - b);
    expect(times.at(-1)! - times[0]!).toBe(FILE_HOLD_MS);
  }
  for (const task of reduceTasks(cbs)) {
    if (task.files.length === 0) continue;
    expect(task.status).toBe('upload_failed');
    for (const f of task.files) expect(f.upload).toBe('failed');
  }
});

test('stall: every task keeps its start and sends no end, cut short', () => {
  const full = byTask(callbacks(base));
  const stalled = byTask(callbacks({ ...base, stall: 1 }));
  expect([...stalled.keys()].sort()).toEqual([...full.keys()].sort());
  for (const cbs of stalled.values()) {
    expect(cbs.filter((cb) => cb.type === 1)).toHaveLength(1);
    expect(cbs.some((cb) => cb.type === 3)).toBe(false);
  }
  // Cut short: far fewer callbacks than the same number of whole tasks send.
  const count = (m: Map<string, Callback[]>) => [...m.values()].reduce((n, l) => n + l.length, 0);
  expect(count(stalled)).toBeLessThan(count(full) * 0.8);
  for (const task of reduceTasks([...stalled.values()].flat())) expect(task.endedAt).toBeNull();
});

test('half the tasks at a rate of 0.5, about', () => {
  const cbs = byTask(callbacks({ ...base, recordings: 60, screenshots: 40, stall: 0.5 }));
  const withoutEnd = [...cbs.values()].filter((list) => !list.some((cb) => cb.type === 3)).length;
  expect(withoutEnd).toBeGreaterThan(30);
  expect(withoutEnd).toBeLessThan(70);
});
