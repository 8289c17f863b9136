// fast-check arbitraries of realistic task lifecycles, as the platform would send them: raw JSON bodies
// of the recording and screenshot services, with the platform's inconsistencies (numeric strings, "" for
// absent values, unknown fields). Each lifecycle also says what a receiver should end up holding for its
// files and status, worked out from the draws rather than from the callbacks. Shared by the domain, store
// and worker tests. The bodies come from the one generator of lifecycles (devkit/emulator/plans.ts, bodiesOf)
// given a plan drawn here; what is drawn, and what a receiver should make of it, is decided here.
import fc from 'fast-check';
import { type Callback, parseCallback } from '../../lib/domain/callback.ts';
import type { FileUpload, TaskStatus } from '../../lib/domain/task.ts';
import { createRandom } from '../../devkit/emulator/random.ts';
import { reorderKeys } from '../../devkit/emulator/reorder-keys.ts';
import { bodiesOf } from '../../devkit/emulator/plan-bodies.ts';
import type { PlannedEvent, TaskPlan } from '../../devkit/emulator/plans.ts';
import type { Body } from '../../lib/platform/bodies.ts';
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

// Letters and digits drawn one by one: fc.stringMatching of the same class costs a tenth of a test's CPU here.
const ALNUM = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'];
const token = (min: number, max: number) =>
  fc.string({ unit: fc.constantFrom(...ALNUM), minLength: min, maxLength: max });

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
      // What the receiver must hold is worked out here from the draws; the bodies come from the emulator's
      // generator (devkit/emulator/plans.ts) given the same plan.
      const fileNameAt = (timestamp: number) =>
        recordingFileName({ sessionId, roomId, userId, streamTag, mode: p.mode, timestamp, format });
      const files: ExpectedFile[] = [];
      const events: PlannedEvent[] = [];
      const fileStarts = [0];
      const sliceMs = p.slicesMin * 60_000;
      const plan: TaskPlan = {
        service: 'recording',
        index: 0,
        offset: 0,
        session: { sessionId, roomId, users: [userId] },
        userId: mix ? '' : userId,
        extra: p.extra,
        events,
        fileStarts,
        recording: {
          mode: p.mode,
          streamTag,
          ext: format,
          config: {
            trigger: p.trigger,
            ...(mix ? { mixLayout: p.mixLayout } : {}),
            slicesMin: p.slicesMin,
            audioFormat: 'aac',
            videoFormat: 'mp4',
          },
          audioSample: mode.audio ? 48000 : '',
          resolution: mode.video ? '1280x720' : '',
        },
      };
      events.push({ type: 1, rel: 0, ...(p.startFailure ?? SUCCESS) });

      const uploads = (file: number, closedAt: number, upload: UploadPlan) => {
        let at = closedAt + 30_000;
        upload.failures.forEach((f, i) => {
          if (i > 0) at += f.gapSteps * UPLOAD_RETRY_MS;
          events.push({ type: 4, rel: at, file, ok: false, ...pickFailure(RECORDING_UPLOAD_FAILURES, f.failure) });
        });
        if (upload.succeeds) {
          if (upload.failures.length) at += upload.successGapSteps * UPLOAD_RETRY_MS;
          events.push({ type: 4, rel: at, file, ok: true, ...SUCCESS });
        }
        files.push({
          fileName: fileNameAt(p.t0 + fileStarts[file]!),
          upload: expectedUpload(upload),
          attempts: upload.failures.length + (upload.succeeds ? 1 : 0),
        });
      };
      const lifecycle = (status: TaskStatus) =>
        finish('recording', p.recordId, bodiesOf(plan, p.t0, p.appKey, p.recordId), p.quirks, files, status);

      if (p.startFailure) {
        // A start that failed produces no media; at most the end reports the same failure.
        let end: { ok: boolean } | null = null;
        if (p.end) {
          end = { ok: false };
          events.push({ type: 3, rel: p.end.afterMs, ...p.startFailure, file: 0, size: 0 });
          files.push({ fileName: fileNameAt(p.t0), upload: 'pending', attempts: 0 });
        }
        return lifecycle(statusOf('recording', files, { ok: false }, end));
      }

      let fileStart = 0;
      p.slices.forEach((s, i) => {
        const at = (i + 1) * sliceMs;
        events.push({ type: 2, rel: at, ...SUCCESS, file: i, size: s.size });
        uploads(i, at, s.upload);
        fileStart = at;
        fileStarts.push(at);
      });
      let end: { ok: boolean } | null = null;
      if (p.end) {
        const at = fileStart + p.end.afterMs;
        const file = fileStarts.length - 1;
        end = { ok: p.end.failure === null };
        events.push({ type: 3, rel: at, ...(p.end.failure ?? SUCCESS), file, size: p.end.size });
        uploads(file, at, p.end.upload);
      }
      return lifecycle(statusOf('recording', files, { ok: true }, end));
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
      const config = {
        trigger: p.trigger,
        slicesSec: p.slicesSec,
        renderMode: p.renderMode,
        picResolution: p.picResolution,
      };
      const events: PlannedEvent[] = [{ type: 1, rel: 0, ...(p.startFailure ?? SUCCESS) }];
      const plan: TaskPlan = {
        service: 'screenshot',
        index: 0,
        offset: 0,
        session: { sessionId, roomId, users: [userId] },
        userId,
        extra: p.extra,
        events,
        fileStarts: [],
        screenshot: { streamId, config, endConfig: config },
      };
      const files: ExpectedFile[] = [];
      const images = p.startFailure ? [] : p.images;
      const intervalMs = p.slicesSec * 1000;

      images.forEach((upload, file) => {
        const capturedAt = (file + 1) * intervalMs;
        plan.fileStarts.push(capturedAt);
        let at = capturedAt + 1_000;
        upload.failures.forEach((f, j) => {
          if (j > 0) at += f.gapSteps * UPLOAD_RETRY_MS;
          const fileState = pickFailure(SCREENSHOT_UPLOAD_FAILURES, f.failure);
          events.push({ type: 4, rel: at, file, ok: false, ...SUCCESS, fileState });
        });
        if (upload.succeeds) {
          if (upload.failures.length) at += upload.successGapSteps * UPLOAD_RETRY_MS;
          events.push({ type: 4, rel: at, file, ok: true, ...SUCCESS });
        }
        files.push({
          fileName: screenshotFileName({ sessionId, roomId, userId, streamId, timestamp: p.t0 + capturedAt }),
          upload: expectedUpload(upload),
          attempts: upload.failures.length + (upload.succeeds ? 1 : 0),
        });
      });

      let end: { ok: boolean } | null = null;
      if (p.end) {
        const failure = p.startFailure ?? p.end.failure;
        end = { ok: failure === null };
        events.push({ type: 3, rel: images.length * intervalMs + p.end.afterMs, ...(failure ?? SUCCESS) });
      }
      return finish(
        'screenshot',
        p.imageId,
        bodiesOf(plan, p.t0, p.appKey, p.imageId),
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
