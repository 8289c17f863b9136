// fast-check arbitraries of realistic task lifecycles, as the platform would send them: raw JSON bodies
// of the recording and screenshot services, with the platform's inconsistencies (numeric strings, "" for
// absent values, unknown fields). Each lifecycle also says what a receiver should end up holding for its
// files and status, worked out from the plan rather than from the callbacks. Shared by the domain, store
// and worker tests.
import fc from 'fast-check';
import type { Service } from '../services.ts';
import { parseCallback } from '../callback.ts';
import type { Callback } from '../callback.ts';
import type { FileUpload, TaskStatus } from '../task.ts';

export type Body = Record<string, unknown>;

export interface ExpectedFile {
  fileName: string;
  upload: FileUpload;
  /** Upload callbacks sent for this file. */
  attempts: number;
}

export interface Lifecycle {
  service: Service;
  /** recordId or imageId. */
  id: string;
  /** Distinct callback bodies, in the order the platform emitted them. */
  bodies: Body[];
  expected: { status: TaskStatus; files: ExpectedFile[] };
}

export interface Delivery {
  service: Service;
  body: Body;
}

const BASE_TS = 1_763_798_400_000;
const DAY_MS = 24 * 60 * 60 * 1000;
/** The platform retries an upload to faulty storage every 10 s (spec §6). */
const RETRY_MS = 10_000;

const RECORDING_UPLOAD_FAILURES = [
  { code: 500, message: 'upload to storage failed' },
  { code: 503, message: 'storage unavailable' },
  { code: 403, message: 'storage access denied' },
] as const;
const SCREENSHOT_UPLOAD_FAILURES = [
  { state: '10001', message: 'storage auth failed' },
  { state: '10002', message: 'storage unreachable' },
  { state: '10003', message: 'bucket not found' },
] as const;
const TASK_FAILURES = [
  { code: 400, message: 'invalid parameters' },
  { code: 500, message: 'internal error' },
  { code: 1004, message: 'room not found' },
] as const;

const MIX_MODES = new Set([3, 4, 5]);
const AUDIO_ONLY_MODES = new Set([2, 5]);
const VIDEO_ONLY_MODES = new Set([1, 4]);

const mostly = <T>(common: fc.Arbitrary<T>, rare: fc.Arbitrary<T>, weight = 6) =>
  fc.oneof({ weight, arbitrary: common }, { weight: 1, arbitrary: rare });

const taskFailure = fc.constantFrom(...TASK_FAILURES);
const okOrFailure = mostly(fc.constant(null), taskFailure);

const token = (min: number, max: number) => fc.stringMatching(new RegExp(`^[A-Za-z0-9]{${min},${max}}$`));

/**
 * How a body departs from the documented types, as the platform's own samples do: bit 0 sends `type` and
 * `code` as strings, bit 1 the timestamp, bit 2 the numbers inside config and output (and `mode`),
 * bit 3 adds fields the receiver does not know. Mostly 0.
 */
const quirks = mostly(fc.constant(0), fc.integer({ min: 1, max: 15 }), 3);
const QUIRK_SLOTS = 24;

function withQuirks(body: Body, mask: number, salt: number): Body {
  const out: Body = { ...body };
  const str = (v: unknown) => (typeof v === 'number' ? String(v) : v);
  if (mask & 1) {
    out.type = str(out.type);
    out.code = str(out.code);
  }
  if (mask & 2) out.timestamp = str(out.timestamp);
  if (mask & 4) {
    if ('mode' in out) out.mode = str(out.mode);
    for (const part of ['config', 'output'] as const) {
      const obj = out[part];
      if (obj && typeof obj === 'object') {
        out[part] = Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, str(v)]));
      }
    }
  }
  if (mask & 8) {
    out.traceId = `trace-${salt}`;
    if (out.output && typeof out.output === 'object') out.output = { ...(out.output as Body), region: 'eu-1' };
  }
  return out;
}

interface UploadPlan {
  /** Failed attempts, each 10 s (or a multiple) after the previous one. */
  failures: { failure: number; gapSteps: number }[];
  /** Whether an upload finally succeeds; `false` with no failures means no upload callback yet. */
  succeeds: boolean;
  /** 0 puts the success at the same timestamp as the last failure: success must win the tie. */
  successGapSteps: number;
}

const uploadPlan = (maxFailures: number, alwaysAttempted: boolean): fc.Arbitrary<UploadPlan> =>
  fc
    .record({
      failures: fc.array(fc.record({ failure: fc.nat({ max: 2 }), gapSteps: fc.integer({ min: 1, max: 3 }) }), {
        maxLength: maxFailures,
      }),
      succeeds: mostly(fc.constant(true), fc.constant(false), 3),
      successGapSteps: mostly(fc.integer({ min: 1, max: 2 }), fc.constant(0), 4),
    })
    .map((p) => (alwaysAttempted && p.failures.length === 0 ? { ...p, succeeds: true } : p));

function expectedUpload(plan: UploadPlan): ExpectedFile['upload'] {
  if (plan.succeeds) return 'uploaded';
  return plan.failures.length ? 'failed' : 'pending';
}

function statusOf(
  service: Service,
  files: readonly ExpectedFile[],
  start: { ok: boolean },
  end: { ok: boolean } | null,
): TaskStatus {
  if (files.some((f) => f.upload === 'failed')) return 'upload_failed';
  if (end?.ok && !files.some((f) => f.upload === 'pending')) return 'completed';
  if (!start.ok || (end && !end.ok)) return 'failed';
  if (end) return 'ended';
  return service === 'recording' ? 'recording' : 'capturing';
}

// ---------------------------------------------------------------------------------------------------
// Recording

/**
 * A recording task: a start in mode 0..6; n slices, each closing a file; possibly an end closing the last
 * file; upload callbacks per file (failures every 10 s, then success or give-up). Sometimes the start
 * fails, and then at most a failed end follows.
 */
export function recordingLifecycle(): fc.Arbitrary<Lifecycle> {
  return fc
    .record({
      recordId: token(6, 12).map((s) => `rec-${s}`),
      appKey: fc.constantFrom('demo-app', 'app-b'),
      roomId: fc.constantFrom('room-1024', 'room-7', 'lobby'),
      sessionId: token(8, 12),
      userId: fc.constantFrom('user-alice', 'user-bob'),
      streamTag: fc.constantFrom('main', 'screen'),
      mode: fc.integer({ min: 0, max: 6 }),
      extra: fc.constantFrom('', 'meeting=abc'),
      t0: fc.integer({ min: BASE_TS, max: BASE_TS + 30 * DAY_MS }),
      trigger: fc.constantFrom(0, 1),
      mixLayout: fc.constantFrom(2, 3),
      slicesMin: fc.constantFrom(1, 30, 60),
      startFailure: mostly(fc.constant(null), taskFailure, 8),
      slices: fc.array(fc.record({ size: fc.integer({ min: 1, max: 2_000_000_000 }), upload: uploadPlan(3, false) }), {
        maxLength: 3,
      }),
      end: mostly(
        fc.record({
          failure: okOrFailure,
          afterMs: fc.integer({ min: 1_000, max: 59_000 }),
          size: fc.integer({ min: 1, max: 2_000_000_000 }),
          upload: uploadPlan(3, false),
        }),
        fc.constant(null),
        4,
      ),
      quirks: fc.array(quirks, { minLength: QUIRK_SLOTS, maxLength: QUIRK_SLOTS }),
    })
    .map((p): Lifecycle => {
      const mix = MIX_MODES.has(p.mode);
      const format = AUDIO_ONLY_MODES.has(p.mode) ? 'aac' : 'mp4';
      const fileNameAt = (ts: number) =>
        mix
          ? `${p.sessionId}_${p.roomId}_${ts}.${format}`
          : p.mode === 6
            ? `${p.sessionId}_${p.roomId}_${p.userId}_${ts}.${format}`
            : `${p.sessionId}_${p.roomId}_${p.userId}_${p.streamTag}_${ts}.${format}`;
      const common = {
        appKey: p.appKey,
        recordId: p.recordId,
        roomId: p.roomId,
        sessionId: p.sessionId,
        userId: mix ? '' : p.userId,
        mode: p.mode,
        extra: p.extra,
      };
      const status = (failure: { code: number; message: string } | null) =>
        failure ? { code: failure.code, errorMessage: failure.message } : { code: 200, errorMessage: 'success' };
      const bodies: Body[] = [];
      const files: ExpectedFile[] = [];
      const sliceMs = p.slicesMin * 60_000;

      bodies.push({
        timestamp: p.t0,
        type: 1,
        ...common,
        ...status(p.startFailure),
        config: {
          trigger: p.trigger,
          ...(mix ? { mixLayout: p.mixLayout } : {}),
          slicesMin: p.slicesMin,
          audioFormat: 'aac',
          videoFormat: 'mp4',
        },
        output: {
          fileName: fileNameAt(p.t0),
          audioSample: VIDEO_ONLY_MODES.has(p.mode) ? '' : 48000,
          videoResoulation: AUDIO_ONLY_MODES.has(p.mode) ? '' : '1280x720',
        },
      });

      const uploads = (fileName: string, closedAt: number, plan: UploadPlan) => {
        let at = closedAt + 30_000;
        plan.failures.forEach((f, i) => {
          if (i > 0) at += f.gapSteps * RETRY_MS;
          const failure = RECORDING_UPLOAD_FAILURES[f.failure]!;
          bodies.push({
            timestamp: at,
            type: 4,
            ...common,
            code: failure.code,
            errorMessage: failure.message,
            output: { fileName, fileUrl: '' },
          });
        });
        if (plan.succeeds) {
          if (plan.failures.length) at += plan.successGapSteps * RETRY_MS;
          bodies.push({
            timestamp: at,
            type: 4,
            ...common,
            ...status(null),
            output: { fileName, fileUrl: `https://storage.example.com/recordings/${fileName}` },
          });
        }
        files.push({
          fileName,
          upload: expectedUpload(plan),
          attempts: plan.failures.length + (plan.succeeds ? 1 : 0),
        });
      };

      if (p.startFailure) {
        // A start that failed produces no media; at most the end reports the same failure.
        let end: { ok: boolean } | null = null;
        if (p.end) {
          end = { ok: false };
          const endAt = p.t0 + p.end.afterMs;
          const fileName = fileNameAt(p.t0);
          bodies.push({
            timestamp: endAt,
            type: 3,
            ...common,
            ...status(p.startFailure),
            output: { fileName, fileSize: 0 },
          });
          files.push({ fileName, upload: 'pending', attempts: 0 });
        }
        return finish(
          'recording',
          p.recordId,
          bodies,
          p.quirks,
          files,
          statusOf('recording', files, { ok: false }, end),
        );
      }

      let fileStart = p.t0;
      p.slices.forEach((s, i) => {
        const at = p.t0 + (i + 1) * sliceMs;
        const fileName = fileNameAt(fileStart);
        bodies.push({ timestamp: at, type: 2, ...common, ...status(null), output: { fileName, fileSize: s.size } });
        uploads(fileName, at, s.upload);
        fileStart = at;
      });
      let end: { ok: boolean } | null = null;
      if (p.end) {
        const at = fileStart + p.end.afterMs;
        const fileName = fileNameAt(fileStart);
        end = { ok: p.end.failure === null };
        bodies.push({
          timestamp: at,
          type: 3,
          ...common,
          ...status(p.end.failure),
          output: { fileName, fileSize: p.end.size },
        });
        uploads(fileName, at, p.end.upload);
      }
      return finish('recording', p.recordId, bodies, p.quirks, files, statusOf('recording', files, { ok: true }, end));
    });
}

// ---------------------------------------------------------------------------------------------------
// Screenshot

/**
 * A screenshot task: a start; k images, each with 1..4 upload attempts (fileState "10000" or a failure
 * state, retried every 10 s, then success or give-up); possibly an end with the start's config. Sometimes
 * the start fails, and then at most a failed end follows.
 */
export function screenshotLifecycle(): fc.Arbitrary<Lifecycle> {
  return fc
    .record({
      imageId: token(6, 12).map((s) => `img-${s}`),
      appKey: fc.constantFrom('demo-app', 'app-b'),
      roomId: fc.constantFrom('room-1024', 'room-7', 'lobby'),
      sessionId: token(8, 12),
      userId: fc.constantFrom('user-alice', 'user-bob'),
      streamId: fc.constantFrom('stream-01', 'stream-02'),
      extra: fc.constantFrom('', 'shots=1'),
      t0: fc.integer({ min: BASE_TS, max: BASE_TS + 30 * DAY_MS }),
      trigger: fc.constantFrom(0, 1),
      slicesSec: fc.constantFrom(5, 10, 30),
      renderMode: fc.constantFrom(0, 1),
      picResolution: fc.constantFrom('640x360', '1280x720'),
      startFailure: mostly(fc.constant(null), taskFailure, 8),
      images: fc.array(uploadPlan(3, true), { maxLength: 4 }),
      end: mostly(
        fc.record({ failure: okOrFailure, afterMs: fc.integer({ min: 1_000, max: 60_000 }) }),
        fc.constant(null),
        4,
      ),
      quirks: fc.array(quirks, { minLength: QUIRK_SLOTS, maxLength: QUIRK_SLOTS }),
    })
    .map((p): Lifecycle => {
      const common = { appKey: p.appKey, sessionId: p.sessionId, roomId: p.roomId, imageId: p.imageId, extra: p.extra };
      const config = {
        trigger: p.trigger,
        slicesSec: p.slicesSec,
        renderMode: p.renderMode,
        picResolution: p.picResolution,
      };
      const status = (failure: { code: number; message: string } | null) =>
        failure ? { code: failure.code, errorMessage: failure.message } : { code: 200, errorMessage: 'success' };
      const bodies: Body[] = [{ timestamp: p.t0, type: 1, ...common, ...status(p.startFailure), config }];
      const files: ExpectedFile[] = [];
      const images = p.startFailure ? [] : p.images;
      const intervalMs = p.slicesSec * 1000;

      images.forEach((plan, i) => {
        const capturedAt = p.t0 + (i + 1) * intervalMs;
        const fileName = `${p.sessionId}_${p.roomId}_${p.userId}_${p.streamId}_${capturedAt}.jpg`;
        let at = capturedAt + 1_000;
        const upload = (state: string, message: string, fileUrl: string) =>
          bodies.push({
            timestamp: at,
            type: 4,
            ...common,
            code: state === '10000' ? 200 : Number(state),
            errorMessage: message,
            tag: '',
            output: { fileName, fileUrl, fileState: state, fileMsg: message },
          });
        plan.failures.forEach((f, j) => {
          if (j > 0) at += f.gapSteps * RETRY_MS;
          const failure = SCREENSHOT_UPLOAD_FAILURES[f.failure]!;
          upload(failure.state, failure.message, '');
        });
        if (plan.succeeds) {
          if (plan.failures.length) at += plan.successGapSteps * RETRY_MS;
          upload('10000', 'success', `https://storage.example.com/shots/${fileName}`);
        }
        files.push({
          fileName,
          upload: expectedUpload(plan),
          attempts: plan.failures.length + (plan.succeeds ? 1 : 0),
        });
      });

      let end: { ok: boolean } | null = null;
      if (p.end) {
        const failure = p.startFailure ?? p.end.failure;
        end = { ok: failure === null };
        bodies.push({
          timestamp: p.t0 + images.length * intervalMs + p.end.afterMs,
          type: 3,
          ...common,
          ...status(failure),
          config,
        });
      }
      return finish(
        'screenshot',
        p.imageId,
        bodies,
        p.quirks,
        files,
        statusOf('screenshot', files, { ok: p.startFailure === null }, end),
      );
    });
}

function finish(
  service: Service,
  id: string,
  bodies: Body[],
  quirkMasks: readonly number[],
  files: ExpectedFile[],
  status: TaskStatus,
): Lifecycle {
  return {
    service,
    id,
    bodies: bodies.map((b, i) => withQuirks(b, quirkMasks[i % quirkMasks.length] ?? 0, i)),
    expected: {
      status,
      files: [...files].sort((a, b) => Buffer.compare(Buffer.from(a.fileName), Buffer.from(b.fileName))),
    },
  };
}

/** A recording or a screenshot lifecycle. */
export function anyLifecycle(): fc.Arbitrary<Lifecycle> {
  return fc.oneof(recordingLifecycle(), screenshotLifecycle());
}

/** Several lifecycles of both services with distinct task ids. */
export function anyLifecycles(options: { minLength?: number; maxLength?: number } = {}): fc.Arbitrary<Lifecycle[]> {
  return fc.uniqueArray(anyLifecycle(), {
    minLength: options.minLength ?? 1,
    maxLength: options.maxLength ?? 4,
    selector: (l) => `${l.service}:${l.id}`,
  });
}

// ---------------------------------------------------------------------------------------------------
// Delivery: duplicates, key order, permutations

/** A small deterministic PRNG (mulberry32), so that a reordering is reproducible from its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A deep copy of a JSON value with the keys of every object in a seed-driven order. */
export function reorderKeysDeep<T>(value: T, seed: number): T {
  const random = prng(seed);
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const entries = Object.entries(v);
    for (let i = entries.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [entries[i], entries[j]] = [entries[j]!, entries[i]!];
    }
    // fromEntries defines own properties, so even a "__proto__" key stays a plain key.
    return Object.fromEntries(entries.map(([k, child]) => [k, walk(child)]));
  };
  return walk(value) as T;
}

/**
 * Items as an at-least-once, unordered transport delivers them: every item at least once, some again (up
 * to `maxExtra` extra copies in all, some with their keys reordered), in any order.
 */
function deliveredAtLeastOnce<T>(
  items: readonly T[],
  copy: (item: T, reorderSeed: number | null) => T,
  maxExtra: number,
): fc.Arbitrary<T[]> {
  if (items.length === 0) return fc.constant([]);
  const extra = fc.record({ index: fc.nat({ max: items.length - 1 }), reorderSeed: fc.option(fc.nat(), { freq: 2 }) });
  return fc.array(extra, { maxLength: maxExtra }).chain((extras) => {
    const all = [...items, ...extras.map(({ index, reorderSeed }) => copy(items[index]!, reorderSeed))];
    return fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length });
  });
}

const copyBody = (body: Body, reorderSeed: number | null): Body =>
  reorderSeed === null ? structuredClone(body) : reorderKeysDeep(body, reorderSeed);

/** The bodies of one task with duplicates (exact or with reordered keys), in any order. */
export function withDuplicatesShuffled(
  bodies: readonly Body[],
  options: { maxExtra?: number } = {},
): fc.Arbitrary<Body[]> {
  return deliveredAtLeastOnce(bodies, copyBody, options.maxExtra ?? bodies.length);
}

/** All bodies of several lifecycles, with duplicates, interleaved in any order. */
export function interleavedDeliveries(
  lifecycles: readonly Lifecycle[],
  options: { maxExtra?: number } = {},
): fc.Arbitrary<Delivery[]> {
  const tagged = lifecycles.flatMap((l) => l.bodies.map((body): Delivery => ({ service: l.service, body })));
  return deliveredAtLeastOnce(
    tagged,
    (d, seed) => ({ service: d.service, body: copyBody(d.body, seed) }),
    options.maxExtra ?? tagged.length,
  );
}

/** Parses a body that is known to be valid; throws with the parse errors otherwise. */
export function mustParse(service: Service, body: unknown): Callback {
  const result = parseCallback(service, body);
  if (!result.ok) throw new Error(`unexpected parse failure (${result.errors.join('; ')}) for ${JSON.stringify(body)}`);
  return result.callback;
}

export function callbacksOf(lifecycle: Lifecycle): Callback[] {
  return lifecycle.bodies.map((body) => mustParse(lifecycle.service, body));
}
