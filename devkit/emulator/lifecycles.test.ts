import { parseCallback, type Callback } from '../../lib/domain/callback.ts';
import { canonicalJson } from '../../lib/domain/canonical.ts';
import { reduceTasks } from '../../lib/domain/reduce-task.ts';
import { FILE_HOLD_MS, UPLOAD_RETRY_MS } from '../../lib/platform/delivery.ts';
import { generateRun, scheduleOffset, type LifecycleOptions, type ScheduledSend } from './lifecycles.ts';
import { REPORTED_GIVE_UP_RETRIES } from './plans.ts';
import { createRandom } from './random.ts';

const BASE = 1_763_798_400_000;
const base: LifecycleOptions = {
  seed: 7,
  recordings: 21,
  screenshots: 6,
  appKey: 'demo-app',
  compress: 3600,
  baseTime: BASE,
};

function parse(send: ScheduledSend): Callback {
  const result = parseCallback(send.service, send.body);
  if (!result.ok) throw new Error(`${JSON.stringify(send.body)} does not parse: ${result.errors.join('; ')}`);
  return result.callback;
}

const byTask = (sends: readonly ScheduledSend[]) => {
  const tasks = new Map<string, ScheduledSend[]>();
  for (const s of sends) {
    const list = tasks.get(s.taskId) ?? [];
    list.push(s);
    tasks.set(s.taskId, list);
  }
  return tasks;
};

/** Upload callbacks per file, in platform time order. */
function uploadsByFile(sends: readonly ScheduledSend[]): Map<string, Callback[]> {
  const files = new Map<string, Callback[]>();
  for (const cb of sends.map(parse)) {
    if (!cb.upload) continue;
    const list = files.get(cb.upload.fileName) ?? [];
    list.push(cb);
    files.set(cb.upload.fileName, list);
  }
  for (const list of files.values()) list.sort((a, b) => a.timestamp - b.timestamp);
  return files;
}

describe('random', () => {
  test('the same seed gives the same sequence, another seed another one', () => {
    const draw = (seed: number | string) => {
      const r = createRandom(seed);
      return Array.from({ length: 20 }, () => r.next());
    };
    expect(draw('abc')).toEqual(draw('abc'));
    expect(draw('abc')).not.toEqual(draw('abd'));
    expect(draw(1).every((x) => x >= 0 && x < 1)).toBe(true);
    const r = createRandom(3);
    const ints = Array.from({ length: 500 }, () => r.int(2, 4));
    expect(new Set(ints)).toEqual(new Set([2, 3, 4]));
  });
});

describe('generateRun', () => {
  test('is deterministic for a seed and a base time', () => {
    const faults = { duplicates: 0.2, reorderWindowMs: 300, outage: 0.5, giveUp: 0.5, failedStarts: 0.2 };
    const a = generateRun({ ...base, ...faults });
    const b = generateRun({ ...base, ...faults });
    expect(JSON.stringify(b.sends)).toBe(JSON.stringify(a.sends));
    const other = generateRun({ ...base, ...faults, seed: 8 });
    expect(JSON.stringify(other.sends)).not.toBe(JSON.stringify(a.sends));
  });

  test('task ids carry the seed and differ from one base time to another', () => {
    const a = generateRun({ ...base, seed: 'my-seed' });
    const b = generateRun({ ...base, seed: 'my-seed', baseTime: BASE + 1 });
    const idsA = new Set(a.sends.map((s) => s.taskId));
    const idsB = new Set(b.sends.map((s) => s.taskId));
    expect(idsA.size).toBe(base.recordings + base.screenshots);
    for (const id of idsA) expect(id).toContain('myseed');
    for (const id of idsB) expect(idsA.has(id)).toBe(false);
  });

  test('every body parses, ids match the task, and the schedule starts at once and never goes back', () => {
    const run = generateRun(base);
    expect(run.sends.length).toBeGreaterThan(base.recordings * 3);
    expect(run.sends[0]!.at).toBe(0);
    let previous = 0;
    for (const send of run.sends) {
      const cb = parse(send);
      expect(cb.id).toBe(send.taskId);
      expect(cb.appKey).toBe('demo-app');
      expect(send.at).toBeGreaterThanOrEqual(previous);
      previous = send.at;
    }
  });

  test('every recording mode 0..6 appears, userId empty exactly in the mix modes', () => {
    const run = generateRun(base);
    const starts = run.sends.map(parse).filter((cb) => cb.service === 'recording' && cb.type === 1);
    expect(new Set(starts.map((cb) => cb.mode))).toEqual(new Set([0, 1, 2, 3, 4, 5, 6]));
    for (const start of starts) {
      const mix = start.mode! >= 3 && start.mode! <= 5;
      expect(start.body.userId === '').toBe(mix);
    }
  });

  test('file names follow the spec patterns', () => {
    const run = generateRun(base);
    for (const cb of run.sends.map(parse)) {
      const name = cb.file?.fileName ?? cb.upload?.fileName ?? cb.startFileName;
      if (!name) continue;
      const { sessionId, roomId, userId } = cb.body as Record<string, string>;
      const prefix = `${sessionId}_${roomId}_`;
      expect(name.startsWith(prefix)).toBe(true);
      const rest = name.slice(prefix.length);
      if (cb.service === 'screenshot') {
        expect(rest).toMatch(/^user-[a-z]+_stream-[0-9a-f]{6}_\d{13}\.jpg$/);
      } else if (cb.mode! >= 3 && cb.mode! <= 5) {
        expect(rest).toMatch(/^\d{13}\.(mp4|flv|aac|mp3)$/);
      } else if (cb.mode === 6) {
        expect(rest).toMatch(new RegExp(`^${userId}_\\d{13}\\.(mp4|flv)$`));
      } else {
        expect(rest).toMatch(new RegExp(`^${userId}_(main|camera|screen)_\\d{13}\\.(mp4|flv|aac|mp3)$`));
      }
    }
  });

  test(
    'a lifecycle: start, slices every slicesMin, end, one successful upload per file; images every ' + 'slicesSec',
    () => {
      const run = generateRun({ ...base, recordings: 30 });
      let sliced = 0;
      for (const sends of byTask(run.sends).values()) {
        const cbs = sends.map(parse).sort((a, b) => a.timestamp - b.timestamp);
        // A real sender never stamps two events of one task with the same time.
        expect(new Set(cbs.map((c) => c.timestamp)).size).toBe(cbs.length);
        expect(cbs[0]!.type).toBe(1);
        expect(cbs.filter((c) => c.type === 1)).toHaveLength(1);
        expect(cbs.filter((c) => c.type === 3)).toHaveLength(1);
        const start = cbs[0]!;
        const files = new Set(cbs.map((c) => c.file?.fileName ?? c.upload?.fileName).filter(Boolean));
        const uploads = cbs.filter((c) => c.type === 4);
        expect(uploads).toHaveLength(files.size);
        expect(uploads.every((u) => u.upload!.ok && u.upload!.url?.endsWith(u.upload!.fileName))).toBe(true);
        if (start.service === 'recording') {
          const slices = cbs.filter((c) => c.type === 2);
          const step = (start.config!.slicesMin as number) * 60_000;
          slices.forEach((s, i) => {
            expect(s.timestamp).toBe(start.timestamp + (i + 1) * step);
          });
          sliced += slices.length;
          // The start names the first file, each slice the file it closes.
          if (slices.length) expect(slices[0]!.file!.fileName).toBe(start.startFileName);
          expect(files.size).toBe(slices.length + 1);
        } else {
          const step = (start.config!.slicesSec as number) * 1000;
          const taken = [...files].map((f) => Number(/_(\d{13})\.jpg$/.exec(f!)![1])).sort((a, b) => a - b);
          taken.forEach((t, i) => {
            expect(t).toBe(start.timestamp + (i + 1) * step);
          });
          expect(cbs.every((c) => c.type !== 2)).toBe(true);
          for (const u of uploads) {
            expect((u.body.output as Record<string, unknown>).fileState).toBe('10000');
            expect(u.code).toBe(200);
          }
        }
      }
      expect(sliced).toBeGreaterThan(0);
      const statuses = reduceTasks(run.sends.map(parse)).map((t) => t.status);
      expect(new Set(statuses)).toEqual(new Set(['completed']));
    },
  );

  test('without faults: no duplicates, no failures, each task sent in platform order', () => {
    const run = generateRun(base);
    const keys = run.sends.map((s) => parse(s).key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(run.sends.some((s) => s.duplicate)).toBe(false);
    expect(run.sends.every((s) => (s.body.code as number) === 200)).toBe(true);
    for (const sends of byTask(run.sends).values()) {
      const ts = sends.map((s) => s.body.timestamp as number);
      expect(ts).toEqual([...ts].sort((a, b) => a - b));
    }
  });

  test('platform time is realistic while the schedule is compressed', () => {
    const run = generateRun(base);
    const recording = [...byTask(run.sends).values()].find((s) => s[0]!.service === 'recording')!;
    const cbs = recording.map(parse);
    const startTs = cbs.find((c) => c.type === 1)!.timestamp;
    const end = recording.find((s) => s.body.type === 3)!;
    const start = recording.find((s) => s.body.type === 1)!;
    const platformMs = (end.body.timestamp as number) - startTs;
    expect(platformMs).toBeGreaterThanOrEqual(2 * 60_000);
    expect(end.at - start.at).toBeLessThan(platformMs / 1000);
    expect(scheduleOffset(60 * 60_000, 3600)).toBe(1000);
  });

  test('the default base time puts every callback in the past', () => {
    const now = Date.now();
    const run = generateRun({ ...base, baseTime: undefined, now, outage: 1, giveUp: 1 });
    const ts = run.sends.map((s) => s.body.timestamp as number);
    expect(Math.max(...ts)).toBeLessThanOrEqual(now);
    expect(Math.max(...ts) - Math.min(...ts)).toBeGreaterThanOrEqual(FILE_HOLD_MS);
  });

  test('duplicates: exact repeats of earlier bodies, some with keys reordered', () => {
    const run = generateRun({ ...base, duplicates: 0.5 });
    const duplicates = run.sends.filter((s) => s.duplicate);
    expect(duplicates.length).toBeGreaterThan(0);
    const originals = new Map(run.sends.filter((s) => !s.duplicate).map((s) => [canonicalJson(s.body), s]));
    let reordered = 0;
    for (const dup of duplicates) {
      const original = originals.get(canonicalJson(dup.body));
      expect(original).toBeDefined();
      expect(dup.at).toBeGreaterThanOrEqual(original!.at);
      if (JSON.stringify(dup.body) !== JSON.stringify(original!.body)) reordered++;
    }
    expect(reordered).toBeGreaterThan(0);
    // The receiver's expectation does not change: duplicates are the same events.
    const plain = generateRun(base);
    expect(reduceTasks(run.sends.map(parse))).toEqual(reduceTasks(plain.sends.map(parse)));
  });

  test('reordering: the same sends, some tasks out of platform order, only within the window', () => {
    const window = 500;
    const plain = generateRun(base);
    const run = generateRun({ ...base, reorderWindowMs: window });
    expect(run.sends.map((s) => canonicalJson(s.body)).sort()).toEqual(
      plain.sends.map((s) => canonicalJson(s.body)).sort(),
    );
    const plainAt = new Map(plain.sends.map((s) => [canonicalJson(s.body), s.at]));
    for (const s of run.sends) expect(Math.abs(s.at - plainAt.get(canonicalJson(s.body))!)).toBeLessThan(window);
    const outOfOrder = [...byTask(run.sends).values()].filter((sends) => {
      const ts = sends.map((s) => s.body.timestamp as number);
      return ts.some((t, i) => i > 0 && t < ts[i - 1]!);
    });
    expect(outOfOrder.length).toBeGreaterThan(0);
  });

  test('storage outage: failures every 10 s of platform time, then a success', () => {
    const run = generateRun({ ...base, outage: 1, giveUp: 0 });
    const files = uploadsByFile(run.sends);
    let retried = 0;
    for (const uploads of files.values()) {
      const last = uploads[uploads.length - 1]!;
      expect(last.upload!.ok).toBe(true);
      for (let i = 1; i < uploads.length; i++) {
        expect(uploads[i]!.timestamp - uploads[i - 1]!.timestamp).toBe(UPLOAD_RETRY_MS);
        expect(uploads[i - 1]!.upload!.ok).toBe(false);
      }
      if (uploads.length > 1) retried++;
    }
    expect(retried).toBeGreaterThan(0);
    for (const cb of run.sends.map(parse)) {
      if (cb.service === 'screenshot' && cb.upload && !cb.upload.ok) {
        const output = cb.body.output as Record<string, unknown>;
        expect(cb.body.code).toBe(Number(output.fileState));
        expect(cb.body.errorMessage).toBe(output.fileMsg);
      }
    }
  });

  test('big tasks: send --lifecycle and emulate made at most 60 images; now as many as asked, in an outage', () => {
    const H = 3_600_000;
    const run = generateRun({
      ...base,
      recordings: 1,
      screenshots: 1,
      durationMs: 7 * H,
      images: 2496,
      outageWindow: { startMs: 2 * H, forMs: 10 * 60_000 },
    });
    const tasks = reduceTasks(run.sends.map(parse));
    const shots = tasks.find((t) => t.service === 'screenshot')!;
    const recording = tasks.find((t) => t.service === 'recording')!;
    // 2,496 images over 7 hours (one every 10 s, its slicesSec), each uploaded at last; both tasks run 7 hours.
    expect(shots.files).toHaveLength(2496);
    expect(shots.config).toMatchObject({ slicesSec: expect.anything() });
    expect(Number(shots.config!.slicesSec)).toBe(10);
    for (const t of [shots, recording]) {
      expect(t.endedAt! - t.startedAt!).toBe(7 * H);
      expect(t.status).toBe('completed');
    }
    // The images first tried within the outage failed every 10 s until it ended, the others at once.
    const files = uploadsByFile(run.sends.filter((s) => s.service === 'screenshot'));
    const retried = [...files.values()].filter((uploads) => uploads.length > 1);
    const inWindow = (t: number) => t >= shots.startedAt! + 2 * H && t < shots.startedAt! + 2 * H + 10 * 60_000;
    expect(retried.length).toBeGreaterThan(50);
    for (const uploads of retried) {
      expect(inWindow(uploads[0]!.timestamp)).toBe(true);
      expect(uploads.at(-1)!.timestamp).toBeGreaterThanOrEqual(shots.startedAt! + 2 * H + 10 * 60_000);
    }
    // An outage that outlasts the hold gives its uploads up: the task ends upload_failed.
    const lost = generateRun({
      ...base,
      recordings: 0,
      screenshots: 1,
      images: 100,
      outageWindow: { startMs: 0, forMs: Number.POSITIVE_INFINITY },
    });
    expect(reduceTasks(lost.sends.map(parse))[0]).toMatchObject({ status: 'upload_failed' });
  });

  test('give-up: no success, reported retries 10 s apart and a last failure 24 h after the first', () => {
    const run = generateRun({ ...base, outage: 1, giveUp: 1 });
    const files = uploadsByFile(run.sends);
    let givenUp = 0;
    for (const uploads of files.values()) {
      if (uploads.some((u) => !u.upload!.ok)) {
        givenUp++;
        expect(uploads.some((u) => u.upload!.ok)).toBe(false);
        expect(uploads).toHaveLength(REPORTED_GIVE_UP_RETRIES + 1);
        for (let i = 1; i < REPORTED_GIVE_UP_RETRIES; i++) {
          expect(uploads[i]!.timestamp - uploads[i - 1]!.timestamp).toBe(UPLOAD_RETRY_MS);
        }
        expect(uploads.at(-1)!.timestamp - uploads[0]!.timestamp).toBe(FILE_HOLD_MS);
      }
    }
    expect(givenUp).toBeGreaterThan(0);
    const tasks = reduceTasks(run.sends.map(parse));
    const failed = tasks.filter((t) => t.status === 'upload_failed');
    expect(failed.length).toBeGreaterThan(0);
    for (const task of failed) {
      for (const file of task.files.filter((f) => f.upload === 'failed')) {
        const first = files.get(file.fileName)![0]!.timestamp;
        expect(file.purgeAt).toBe(first + FILE_HOLD_MS);
      }
    }
  });

  test('failed starts: a start with a code other than 200, then nothing or a failed end', () => {
    const run = generateRun({ ...base, failedStarts: 1 });
    const tasks = byTask(run.sends);
    let withEnd = 0;
    for (const sends of tasks.values()) {
      const cbs = sends.map(parse);
      expect(cbs[0]!.type).toBe(1);
      expect(cbs[0]!.code).not.toBe(200);
      expect(cbs.every((c) => c.type === 1 || c.type === 3)).toBe(true);
      if (cbs.length === 2) {
        withEnd++;
        expect(cbs[1]!.code).not.toBe(200);
      }
    }
    expect(withEnd).toBeGreaterThan(0);
    expect(withEnd).toBeLessThan(tasks.size);
    expect(new Set(reduceTasks(run.sends.map(parse)).map((t) => t.status))).toEqual(new Set(['failed']));
  });

  test('ten thousand callbacks are generated and all parse', () => {
    const run = generateRun({
      ...base,
      recordings: 400,
      screenshots: 250,
      duplicates: 0.1,
      outage: 0.2,
      giveUp: 0.2,
      reorderWindowMs: 50,
    });
    expect(run.sends.length).toBeGreaterThanOrEqual(10_000);
    const keys = new Set(run.sends.map((s) => parse(s).key));
    expect(keys.size).toBe(run.sends.filter((s) => !s.duplicate).length);
  });
});
