// fast-check arbitraries of realistic task lifecycles, as the platform would send them: raw JSON bodies
// of the recording and screenshot services, with the platform's inconsistencies (numeric strings, "" for
// absent values, unknown fields). Each lifecycle also says what a receiver should end up holding for its
// files and status, worked out from the plan rather than from the callbacks. Shared by the domain, store
// and worker tests. The platform's own description (lib/platform/) gives the modes, file names, body
// shapes and failure values; what is drawn, and what a receiver should make of it, is decided here.
import fc from 'fast-check';
import { type Callback, parseCallback } from '../../lib/domain/callback.ts';
import type { FileUpload, TaskStatus } from '../../lib/domain/task.ts';
import { createRandom } from '../../lib/emulator/random.ts';
import { reorderKeys } from '../../lib/emulator/reorder-keys.ts';
import {
  type Body,
  type RecordingTask,
  recordingFileClosed,
  recordingStart,
  recordingUpload,
  type ScreenshotTask,
  screenshotStartOrEnd,
  screenshotUpload,
} from '../../lib/platform/bodies.ts';
import { UPLOAD_RETRY_MS } from '../../lib/platform/delivery.ts';
import {
  type Outcome,
  RECORDING_UPLOAD_FAILURES,
  SCREENSHOT_UPLOAD_FAILURES,
  SUCCESS,
  TASK_FAILURES,
} from '../../lib/platform/failures.ts';
import { recordingFileName, screenshotFileName } from '../../lib/platform/file-names.ts';
import { knownMode, RECORDING_MODES } from '../../lib/platform/modes.ts';
import type { Service } from '../../lib/platform/services.ts';

export type { Body };

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

const mostly = <T>(common: fc.Arbitrary<T>, rare: fc.Arbitrary<T>, weight = 6) =>
  fc.oneof({ weight, arbitrary: common }, { weight: 1, arbitrary: rare });

const taskFailure: fc.Arbitrary<Outcome> = fc.constantFrom(...TASK_FAILURES);
const pickFailure = <T>(catalogue: readonly T[], index: number): T => catalogue[index % catalogue.length]!;
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
      // `failure` picks from the service's catalogue of upload failures, modulo its length.
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
      mode: fc.integer({ min: 0, max: RECORDING_MODES.length - 1 }).map((i) => RECORDING_MODES[i]!.mode),
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
      const mode = knownMode(p.mode);
      const mix = mode.kind === 'mix';
      const format = mode.video ? 'mp4' : 'aac';
      const { sessionId, roomId, userId, streamTag } = p;
      const fileNameAt = (timestamp: number) =>
        recordingFileName({ sessionId, roomId, userId, streamTag, mode: p.mode, timestamp, format });
      const task: RecordingTask = {
        appKey: p.appKey,
        recordId: p.recordId,
        roomId: p.roomId,
        sessionId: p.sessionId,
        userId: mix ? '' : p.userId,
        mode: p.mode,
        extra: p.extra,
      };
      const bodies: Body[] = [];
      const files: ExpectedFile[] = [];
      const sliceMs = p.slicesMin * 60_000;

      const config = {
        trigger: p.trigger,
        ...(mix ? { mixLayout: p.mixLayout } : {}),
        slicesMin: p.slicesMin,
        audioFormat: 'aac',
        videoFormat: 'mp4',
      };
      const output = {
        fileName: fileNameAt(p.t0),
        audioSample: mode.audio ? 48000 : '',
        videoResoulation: mode.video ? '1280x720' : '',
      };
      bodies.push(recordingStart(task, p.t0, p.startFailure ?? SUCCESS, config, output));

      const uploads = (fileName: string, closedAt: number, plan: UploadPlan) => {
        let at = closedAt + 30_000;
        plan.failures.forEach((f, i) => {
          if (i > 0) at += f.gapSteps * UPLOAD_RETRY_MS;
          bodies.push(recordingUpload(task, at, pickFailure(RECORDING_UPLOAD_FAILURES, f.failure), fileName));
        });
        if (plan.succeeds) {
          if (plan.failures.length) at += plan.successGapSteps * UPLOAD_RETRY_MS;
          bodies.push(recordingUpload(task, at, SUCCESS, fileName));
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
          const fileName = fileNameAt(p.t0);
          bodies.push(recordingFileClosed(task, 3, p.t0 + p.end.afterMs, p.startFailure, { fileName, fileSize: 0 }));
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
        bodies.push(recordingFileClosed(task, 2, at, SUCCESS, { fileName, fileSize: s.size }));
        uploads(fileName, at, s.upload);
        fileStart = at;
      });
      let end: { ok: boolean } | null = null;
      if (p.end) {
        const at = fileStart + p.end.afterMs;
        const fileName = fileNameAt(fileStart);
        end = { ok: p.end.failure === null };
        bodies.push(recordingFileClosed(task, 3, at, p.end.failure ?? SUCCESS, { fileName, fileSize: p.end.size }));
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
      const { sessionId, roomId, userId, streamId } = p;
      const task: ScreenshotTask = { appKey: p.appKey, sessionId, roomId, imageId: p.imageId, extra: p.extra };
      const config = {
        trigger: p.trigger,
        slicesSec: p.slicesSec,
        renderMode: p.renderMode,
        picResolution: p.picResolution,
      };
      const bodies: Body[] = [screenshotStartOrEnd(task, 1, p.t0, p.startFailure ?? SUCCESS, config)];
      const files: ExpectedFile[] = [];
      const images = p.startFailure ? [] : p.images;
      const intervalMs = p.slicesSec * 1000;

      images.forEach((plan, i) => {
        const capturedAt = p.t0 + (i + 1) * intervalMs;
        const fileName = screenshotFileName({ sessionId, roomId, userId, streamId, timestamp: capturedAt });
        let at = capturedAt + 1_000;
        plan.failures.forEach((f, j) => {
          if (j > 0) at += f.gapSteps * UPLOAD_RETRY_MS;
          bodies.push(screenshotUpload(task, at, fileName, pickFailure(SCREENSHOT_UPLOAD_FAILURES, f.failure)));
        });
        if (plan.succeeds) {
          if (plan.failures.length) at += plan.successGapSteps * UPLOAD_RETRY_MS;
          bodies.push(screenshotUpload(task, at, fileName, null));
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
        const at = p.t0 + images.length * intervalMs + p.end.afterMs;
        bodies.push(screenshotStartOrEnd(task, 3, at, failure ?? SUCCESS, config));
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

/** A deep copy of a JSON value with the keys of every object in a seed-driven order. */
export function reorderKeysDeep<T>(value: T, seed: number): T {
  return reorderKeys(value, createRandom(seed));
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
