import { FILE_HOLD_MS, UPLOAD_RETRY_MS } from '../../lib/platform/delivery.ts';
import {
  type FileStateFailure,
  fileStateCode,
  type Outcome,
  RECORDING_UPLOAD_FAILURES,
  SCREENSHOT_UPLOAD_FAILURES,
  START_FAILURES,
  SUCCESS,
} from '../../lib/platform/failures.ts';
import { knownMode } from '../../lib/platform/modes.ts';
import type { Service } from '../../lib/platform/services.ts';
import { chanceIfGiven, type Random } from './random.ts';

/** Faults that shape a task's own lifecycle (the delivery faults are the run's). */
export interface TaskFaults {
  /** Probability that a task's uploads meet a storage outage (1: every task). */
  outage?: number;
  /** Probability that an outage outlasts the 24 h the platform holds files (the upload is given up). */
  giveUp?: number;
  /** Probability that a task fails to start (start with a code other than 200, then nothing or an end). */
  failedStarts?: number;
  /**
   * Probability that a task's uploads fail for good: every file's attempts fail until the platform gives up
   * 24 h after the first, and deletes the file then (the receiver finds it lost once that time has passed).
   */
  lose?: number;
  /** Probability that a task stops mid-way: no callback after a moment drawn within it, and no end. */
  stall?: number;
  /**
   * Divides every recording file's size: a run whose files are stored in the local stack's S3 emulator, which
   * holds them in memory, reports sizes it can store (an hour of video, some kilobytes).
   */
  sizeDivisor?: number;
  /**
   * A storage outage in every task, from this long after its start for `forMs` (Infinity: it outlasts the platform's
   * 24-hour hold, and the uploads caught in it are given up): each upload whose first attempt falls in it fails every
   * 10 s until it ends. In place of the drawn outage of `outage`.
   */
  outageWindow?: { startMs: number; forMs: number };
}

/** The size of a task, in place of the drawn one: big tasks, to try the console and the commands on by hand. */
export interface TaskShape {
  /** How long each task runs, from its start to its end. */
  durationMs?: number;
  /**
   * Screenshot tasks: this many images, spread evenly over `durationMs` when it is given (their `slicesSec` is the
   * interval in whole seconds, at least 1), else one every `slicesSec`.
   */
  images?: number;
}

/**
 * The platform retries a held file every 10 s for 24 h, 8,640 attempts. Reporting each would swamp a
 * demo, so a give-up reports its first attempts and its last one; what a receiver must get right
 * (attempts counted, the first failure, the final outcome, purgeAt) is the same.
 */
export const REPORTED_GIVE_UP_RETRIES = 6;

const SECOND = 1000;
export const MINUTE = 60 * SECOND;

/** One callback of a task: its outcome, and its time from the task's start. */
export interface PlannedEvent extends Outcome {
  type: 1 | 2 | 3 | 4;
  rel: number;
  /** Index of the file the event concerns (slices, ends, uploads). */
  file?: number;
  size?: number;
  ok?: boolean;
  /** A failed screenshot upload's state (default: the first of SCREENSHOT_UPLOAD_FAILURES). */
  fileState?: FileStateFailure;
}

export interface Session {
  sessionId: string;
  roomId: string;
  users: string[];
}

export interface TaskPlan {
  service: Service;
  index: number;
  /** Platform time of the task's start, from the run's base time. */
  offset: number;
  session: Session;
  userId: string;
  extra: string;
  events: PlannedEvent[];
  /** Start time (relative) of each file: the timestamp part of its name. */
  fileStarts: number[];
  recording?: {
    mode: number;
    streamTag: string;
    ext: string;
    config: Record<string, unknown>;
    audioSample: number | string;
    resolution: string;
  };
  screenshot?: {
    streamId: string;
    config: Record<string, unknown>;
    endConfig: Record<string, unknown>;
  };
}

const NAMES = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan', 'judy'];
const RESOLUTIONS = ['640x360', '1280x720', '1920x1080'];
/** Every upload failure carries the values of the platform's sample bodies. */
export const RECORDING_UPLOAD_FAILURE = RECORDING_UPLOAD_FAILURES[0]!;
/** The failure a screenshot upload reports when its plan names none. */
export const SCREENSHOT_UPLOAD_FAILURE = SCREENSHOT_UPLOAD_FAILURES[0]!;

/** Rough bytes per second of a recording, for believable file sizes. */
const bytesPerSecond = (m: { audio: boolean; video: boolean }) => (m.video ? (m.audio ? 200_000 : 185_000) : 16_000);

/** Keeps the event times of one task distinct: a real sender never stamps two events with the same ms. */
class TaskClock {
  private readonly used = new Set<number>();
  take(t: number): number {
    this.used.add(t);
    return t;
  }
  /** Shifts a whole chain forward by 1 ms until none of its points is taken, then takes them. */
  takeChain(first: number, build: (first: number) => number[]): number[] {
    for (let shift = 0; ; shift++) {
      const points = build(first + shift);
      if (points.every((p) => !this.used.has(p))) {
        for (const p of points) this.used.add(p);
        return points;
      }
    }
  }
}

interface Outage {
  start: number;
  /** Infinity when the outage outlasts the hold: files caught in it are given up. */
  end: number;
}

/**
 * The upload attempts of one file whose first attempt is at `first`. Outside an outage: one success.
 * Inside: a failure every 10 s until the outage ends, then a success; or, when the outage outlasts the
 * hold, the first reported failures and the last one at first + 24 h.
 */
function uploadChain(first: number, outage: Outage | null): { at: number; ok: boolean }[] {
  if (!outage || first < outage.start || first >= outage.end) return [{ at: first, ok: true }];
  const chain: { at: number; ok: boolean }[] = [];
  if (outage.end === Infinity) {
    for (let k = 0; k < REPORTED_GIVE_UP_RETRIES; k++) chain.push({ at: first + k * UPLOAD_RETRY_MS, ok: false });
    chain.push({ at: first + FILE_HOLD_MS, ok: false });
    return chain;
  }
  let t = first;
  while (t < outage.end) {
    chain.push({ at: t, ok: false });
    t += UPLOAD_RETRY_MS;
  }
  chain.push({ at: t, ok: true });
  return chain;
}

function planOutage(rng: Random, firstAttempts: number[], opts: TaskFaults): Outage | null {
  if (firstAttempts.length === 0) return null;
  if (opts.outageWindow) {
    const { startMs, forMs } = opts.outageWindow;
    return { start: startMs, end: startMs + forMs };
  }
  // Lost for good: an outage from before the first attempt that outlasts the hold.
  if (chanceIfGiven(rng, opts.lose)) return { start: Math.min(...firstAttempts) - 1, end: Infinity };
  if (!rng.chance(opts.outage ?? 0)) return null;
  const start = rng.pick(firstAttempts) - rng.int(0, 5 * SECOND);
  const end = rng.chance(opts.giveUp ?? 0) ? Infinity : start + rng.int(15 * SECOND, 2 * MINUTE);
  return { start, end };
}

/** Adds the upload events of every file, each file's attempts kept apart from every other event time. */
function planUploads(
  clock: TaskClock,
  events: PlannedEvent[],
  firstAttempts: number[],
  outage: Outage | null,
  failure: Outcome,
): void {
  firstAttempts.forEach((first, file) => {
    let chain: { at: number; ok: boolean }[] = [];
    clock.takeChain(first, (f) => {
      chain = uploadChain(f, outage);
      return chain.map((c) => c.at);
    });
    for (const attempt of chain) {
      events.push({
        type: 4,
        rel: attempt.at,
        file,
        ok: attempt.ok,
        ...(attempt.ok ? SUCCESS : failure),
      });
    }
  });
}

export function planRecording(
  rng: Random,
  index: number,
  mode: number,
  session: Session,
  opts: TaskFaults & TaskShape,
): TaskPlan {
  const clock = new TaskClock();
  const recordingMode = knownMode(mode);
  const { audio, video } = recordingMode;
  const mix = recordingMode.kind === 'mix';
  const slicesMin = rng.pick([15, 30, 60, 60]);
  const audioFormat = rng.pick(['aac', 'aac', 'mp3']);
  const videoFormat = rng.pick(['mp4', 'mp4', 'flv']);
  const config: Record<string, unknown> = { trigger: rng.pick([0, 1]) };
  if (mix) config.mixLayout = rng.pick([2, 3]);
  // The platform's own samples send slicesMin both as a number and as a numeric string.
  config.slicesMin = rng.chance(0.3) ? String(slicesMin) : slicesMin;
  if (audio) config.audioFormat = audioFormat;
  if (video) config.videoFormat = videoFormat;
  const plan: TaskPlan = {
    service: 'recording',
    index,
    offset: 0,
    session,
    userId: mix ? '' : rng.pick(session.users),
    extra: rng.pick(['', '', `meeting=${rng.string(6)}`, `{"course":"${rng.string(4)}"}`]),
    events: [],
    fileStarts: [0],
    recording: {
      mode,
      streamTag: rng.pick(['main', 'camera', 'screen']),
      ext: video ? videoFormat : audioFormat,
      config,
      audioSample: audio ? rng.pick([48000, 44100]) : '',
      resolution: video ? rng.pick(RESOLUTIONS) : '',
    },
  };
  const { events } = plan;

  if (rng.chance(opts.failedStarts ?? 0)) {
    const failure = rng.pick(START_FAILURES.recording);
    events.push({ type: 1, rel: clock.take(0), ...failure });
    if (rng.chance(0.5)) {
      events.push({ type: 3, rel: clock.take(rng.int(1 * SECOND, 30 * SECOND)), ...failure, file: 0, size: 0 });
    }
    return plan;
  }

  events.push({ type: 1, rel: clock.take(0), ...SUCCESS });
  const sliceMs = slicesMin * MINUTE;
  // Drawn whether or not a duration is given, so that the rest of the task does not depend on it.
  const drawn = rng.int(2 * MINUTE, 150 * MINUTE);
  const durationMs = opts.durationMs ?? drawn;
  const rate = bytesPerSecond(recordingMode);
  const sizeOf = (ms: number) =>
    Math.max(1, Math.round(((ms / SECOND) * rate * (0.85 + rng.next() * 0.3)) / (opts.sizeDivisor ?? 1)));
  const closes: number[] = [];
  // A slice closes the current file every slicesMin; the end closes the last one
  // (docs/platform-callbacks.md §2.4, §2.5).
  for (let t = sliceMs; t < durationMs; t += sliceMs) {
    const file = plan.fileStarts.length - 1;
    events.push({ type: 2, rel: clock.take(t), ...SUCCESS, file, size: sizeOf(sliceMs) });
    closes.push(t);
    plan.fileStarts.push(t);
  }
  const last = plan.fileStarts.length - 1;
  events.push({
    type: 3,
    rel: clock.take(durationMs),
    ...SUCCESS,
    file: last,
    size: sizeOf(durationMs - plan.fileStarts[last]!),
  });
  closes.push(durationMs);
  const firstAttempts = closes.map((c) => c + rng.int(3 * SECOND, 40 * SECOND));
  planUploads(clock, events, firstAttempts, planOutage(rng, firstAttempts, opts), RECORDING_UPLOAD_FAILURE);
  planStall(rng, plan, durationMs, opts);
  return plan;
}

export function planScreenshot(rng: Random, index: number, session: Session, opts: TaskFaults & TaskShape): TaskPlan {
  const clock = new TaskClock();
  const spacing = imageSpacing(rng.pick([5, 10, 10, 15, 30]), opts);
  const slicesSec = spacing.slicesSec;
  const trigger = rng.pick([0, 1]);
  const renderMode = rng.pick([0, 1]);
  const picResolution = rng.pick(RESOLUTIONS);
  // The platform's document tabulates trigger and slicesSec as strings; its sample bodies carry numbers.
  // Send both.
  const asStrings = (): Record<string, unknown> => ({
    trigger: String(trigger),
    slicesSec: String(slicesSec),
    renderMode,
    picResolution,
  });
  const asNumbers = (): Record<string, unknown> => ({ trigger, slicesSec, renderMode, picResolution });
  const plan: TaskPlan = {
    service: 'screenshot',
    index,
    offset: 0,
    session,
    userId: rng.pick(session.users),
    extra: rng.pick(['', '', `class=${rng.string(5)}`]),
    events: [],
    fileStarts: [],
    screenshot: {
      streamId: `stream-${rng.string(6, '0123456789abcdef')}`,
      config: rng.chance(0.3) ? asStrings() : asNumbers(),
      endConfig: rng.chance(0.5) ? asStrings() : asNumbers(),
    },
  };
  const { events } = plan;

  if (rng.chance(opts.failedStarts ?? 0)) {
    const failure = rng.pick(START_FAILURES.screenshot);
    events.push({ type: 1, rel: clock.take(0), ...failure });
    if (rng.chance(0.5)) events.push({ type: 3, rel: clock.take(rng.int(1 * SECOND, 30 * SECOND)), ...failure });
    return plan;
  }

  events.push({ type: 1, rel: clock.take(0), ...SUCCESS });
  const drawn = rng.int(20 * SECOND, 5 * MINUTE);
  const durationMs = opts.durationMs ?? (opts.images === undefined ? drawn : (opts.images + 1) * spacing.everyMs);
  const firstAttempts: number[] = [];
  // An image every slicesSec (or as many as asked, evenly over the duration); each is uploaded a moment after it is
  // taken (docs/platform-callbacks.md §2.9, §2.10).
  const images = opts.images ?? Math.ceil(durationMs / spacing.everyMs) - 1;
  for (let k = 1; k <= images; k++) {
    const t = Math.round(k * spacing.everyMs);
    plan.fileStarts.push(t);
    firstAttempts.push(t + rng.int(300, 2500));
  }
  events.push({ type: 3, rel: clock.take(durationMs), ...SUCCESS });
  const failure = screenshotUploadFailure();
  planUploads(clock, events, firstAttempts, planOutage(rng, firstAttempts, opts), failure);
  planStall(rng, plan, durationMs, opts);
  return plan;
}

/**
 * How far apart a screenshot task's images are: its drawn `slicesSec`, or, for a number of images over a given
 * duration, the duration shared among them, with the `slicesSec` its config reports rounded to whole seconds.
 */
function imageSpacing(drawnSlicesSec: number, shape: TaskShape): { slicesSec: number; everyMs: number } {
  if (shape.images === undefined || shape.durationMs === undefined)
    return { slicesSec: drawnSlicesSec, everyMs: drawnSlicesSec * SECOND };
  const everyMs = shape.durationMs / (shape.images + 1);
  return { slicesSec: Math.max(1, Math.round(everyMs / SECOND)), everyMs };
}

/** A task that stops mid-way (`stall`): nothing after a moment drawn within its run, and no end. */
function planStall(rng: Random, plan: TaskPlan, durationMs: number, opts: TaskFaults): void {
  if (!chanceIfGiven(rng, opts.stall)) return;
  const cut = rng.int(1, Math.max(1, durationMs - 1));
  plan.events = plan.events.filter((ev) => ev.type === 1 || (ev.type !== 3 && ev.rel < cut));
}

export function makeSessions(rng: Random, count: number): Session[] {
  const sessions: Session[] = [];
  for (let i = 0; i < count; i++) {
    const users = rng
      .shuffle([...NAMES])
      .slice(0, 3)
      .map((n) => `user-${n}`);
    sessions.push({ sessionId: rng.string(12), roomId: `room-${rng.int(1000, 9999)}`, users });
  }
  return sessions;
}

/** The outcome of a screenshot's failed upload, as the platform reports it. */
export function screenshotUploadFailure(): Outcome {
  return { code: fileStateCode(SCREENSHOT_UPLOAD_FAILURE.state), message: SCREENSHOT_UPLOAD_FAILURE.message };
}
