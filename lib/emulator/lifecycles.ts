// Pure generation of what the platform would send: recording and screenshot task lifecycles as an
// ordered list of scheduled sends. Two clocks are kept apart on purpose. Bodies carry realistic platform
// time (a 60-minute recording spans 60 minutes of `timestamp`s, upload retries are 10 s apart, a give-up
// comes 24 h after the first failure); the send schedule (`at`) is that time divided by a compression
// factor, so a whole run is sent in seconds.
import type { Service } from '../domain/services.ts';
import { createRandom, type Random } from './random.ts';

export interface ScheduledSend {
  service: Service;
  /** The callback body; serialised as is, so key order is part of what is sent. */
  body: Record<string, unknown>;
  /** When to send it: milliseconds of wall-clock time from the start of the run. */
  at: number;
  /** recordId or imageId. */
  taskId: string;
  /** A repeat of a body sent before (fault injection). */
  duplicate: boolean;
}

export interface FaultOptions {
  /** Probability that a callback is delivered more than once (exact duplicate, sometimes keys reordered). */
  duplicates?: number;
  /** Sends whose `at` fall within this many milliseconds of each other are shuffled. */
  reorderWindowMs?: number;
  /** Probability that a task's uploads meet a storage outage (1: every task). */
  outage?: number;
  /** Probability that an outage outlasts the 24 h the platform holds files (the upload is given up). */
  giveUp?: number;
  /** Probability that a task fails to start (start with a code other than 200, then nothing or an end). */
  failedStarts?: number;
}

export interface LifecycleOptions extends FaultOptions {
  seed: number | string;
  recordings: number;
  screenshots: number;
  appKey: string;
  /** Platform milliseconds per wall-clock millisecond of the schedule (3600: an hour in a second). */
  compress: number;
  /** Platform time (ms) the run starts at; default: so that the run's last callback is just before `now`. */
  baseTime?: number;
  /** The current time, for the default base time. */
  now?: number;
}

export interface GeneratedRun {
  seed: string;
  baseTime: number;
  /** Part of every task id: different for every base time, so separate runs never share a task. */
  runId: string;
  sends: ScheduledSend[];
  tasks: { recording: number; screenshot: number };
  /** Platform time from the first to the last callback. */
  platformSpanMs: number;
  /** Wall-clock time from the first to the last scheduled send. */
  scheduleSpanMs: number;
}

export const DEFAULT_COMPRESS = 3600;
/** Spec §6 delivery rule 2 and §8: uploads to a faulty storage are retried every 10 s, files held 24 h. */
export const UPLOAD_RETRY_MS = 10_000;
export const HOLD_MS = 24 * 60 * 60 * 1000;
/**
 * The platform retries a held file every 10 s for 24 h, 8,640 attempts. Reporting each would swamp a
 * demo, so a give-up reports its first attempts and its last one; what a receiver must get right
 * (attempts counted, the first failure, the final outcome, purgeAt) is the same.
 */
export const REPORTED_GIVE_UP_RETRIES = 6;
/**
 * Beyond this much platform time the schedule is compressed a further TAIL_COMPRESS times, so that a
 * 24-hour give-up does not dominate the length of a run.
 */
const TAIL_KNEE_MS = 4 * 60 * 60 * 1000;
const TAIL_COMPRESS = 24;

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/** Wall-clock offset of a platform time offset. Monotonic, so the schedule keeps the platform's order. */
export function scheduleOffset(platformMs: number, compress: number): number {
  const warped = platformMs <= TAIL_KNEE_MS ? platformMs : TAIL_KNEE_MS + (platformMs - TAIL_KNEE_MS) / TAIL_COMPRESS;
  return Math.round(warped / compress);
}

// ---------------------------------------------------------------------------------------------------
// Plans: what happens in each task, in platform time relative to the task's start. Bodies are built
// from plans once the run's base time is known (file names embed absolute timestamps).

interface PlannedEvent {
  type: 1 | 2 | 3 | 4;
  rel: number;
  code: number;
  message: string;
  /** Index of the file the event concerns (slices, ends, uploads). */
  file?: number;
  size?: number;
  ok?: boolean;
}

interface Session {
  sessionId: string;
  roomId: string;
  users: string[];
}

interface TaskPlan {
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
const RECORDING_START_FAILURES = [
  { code: 500, message: 'recording failed to start: internal error' },
  { code: 403, message: 'recording service is not enabled for this application' },
];
const SCREENSHOT_START_FAILURES = [
  { code: 500, message: 'screenshot failed to start: internal error' },
  { code: 403, message: 'screenshot service is not enabled for this application' },
];
/** Values of the platform's sample bodies (spec fixtures): recording failures carry 500, screenshots 10002. */
const RECORDING_UPLOAD_FAILURE = { code: 500, message: 'upload to storage failed' };
const SCREENSHOT_UPLOAD_FAILURE = { state: '10002', message: 'storage unreachable' };
const STORAGE_BASE = 'https://storage.example.com';

/** Recording modes (spec §2.2): which are mix modes and what each records. */
const isMix = (mode: number) => mode >= 3 && mode <= 5;
const hasAudio = (mode: number) => mode !== 1 && mode !== 4;
const hasVideo = (mode: number) => mode !== 2 && mode !== 5;
/** Rough bytes per second of a recording, for believable file sizes. */
const bytesPerSecond = (mode: number) => (hasVideo(mode) ? (hasAudio(mode) ? 200_000 : 185_000) : 16_000);

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
    chain.push({ at: first + HOLD_MS, ok: false });
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

function planOutage(rng: Random, firstAttempts: number[], opts: FaultOptions): Outage | null {
  if (firstAttempts.length === 0 || !rng.chance(opts.outage ?? 0)) return null;
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
  failure: { code: number; message: string },
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
        code: attempt.ok ? 200 : failure.code,
        message: attempt.ok ? 'success' : failure.message,
      });
    }
  });
}

function planRecording(rng: Random, index: number, mode: number, session: Session, opts: FaultOptions): TaskPlan {
  const clock = new TaskClock();
  const mix = isMix(mode);
  const audio = hasAudio(mode);
  const video = hasVideo(mode);
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
    const failure = rng.pick(RECORDING_START_FAILURES);
    events.push({ type: 1, rel: clock.take(0), ...failure });
    if (rng.chance(0.5)) {
      events.push({ type: 3, rel: clock.take(rng.int(1 * SECOND, 30 * SECOND)), ...failure, file: 0, size: 0 });
    }
    return plan;
  }

  events.push({ type: 1, rel: clock.take(0), code: 200, message: 'success' });
  const sliceMs = slicesMin * MINUTE;
  const durationMs = rng.int(2 * MINUTE, 150 * MINUTE);
  const rate = bytesPerSecond(mode);
  const sizeOf = (ms: number) => Math.round((ms / SECOND) * rate * (0.85 + rng.next() * 0.3));
  const closes: number[] = [];
  // A slice closes the current file every slicesMin; the end closes the last one (spec §2.4, §2.5).
  for (let t = sliceMs; t < durationMs; t += sliceMs) {
    const file = plan.fileStarts.length - 1;
    events.push({ type: 2, rel: clock.take(t), code: 200, message: 'success', file, size: sizeOf(sliceMs) });
    closes.push(t);
    plan.fileStarts.push(t);
  }
  const last = plan.fileStarts.length - 1;
  events.push({
    type: 3,
    rel: clock.take(durationMs),
    code: 200,
    message: 'success',
    file: last,
    size: sizeOf(durationMs - plan.fileStarts[last]!),
  });
  closes.push(durationMs);
  const firstAttempts = closes.map((c) => c + rng.int(3 * SECOND, 40 * SECOND));
  planUploads(clock, events, firstAttempts, planOutage(rng, firstAttempts, opts), RECORDING_UPLOAD_FAILURE);
  return plan;
}

function planScreenshot(rng: Random, index: number, session: Session, opts: FaultOptions): TaskPlan {
  const clock = new TaskClock();
  const slicesSec = rng.pick([5, 10, 10, 15, 30]);
  const trigger = rng.pick([0, 1]);
  const renderMode = rng.pick([0, 1]);
  const picResolution = rng.pick(RESOLUTIONS);
  // The spec tabulates trigger and slicesSec as strings; its sample bodies carry numbers. Send both.
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
    const failure = rng.pick(SCREENSHOT_START_FAILURES);
    events.push({ type: 1, rel: clock.take(0), ...failure });
    if (rng.chance(0.5)) events.push({ type: 3, rel: clock.take(rng.int(1 * SECOND, 30 * SECOND)), ...failure });
    return plan;
  }

  events.push({ type: 1, rel: clock.take(0), code: 200, message: 'success' });
  const durationMs = rng.int(20 * SECOND, 5 * MINUTE);
  const firstAttempts: number[] = [];
  // An image every slicesSec; each is uploaded a moment after it is taken (spec §2.9, §2.10).
  for (let t = slicesSec * SECOND; t < durationMs; t += slicesSec * SECOND) {
    plan.fileStarts.push(t);
    firstAttempts.push(t + rng.int(300, 2500));
  }
  events.push({ type: 3, rel: clock.take(durationMs), code: 200, message: 'success' });
  const failure = { code: Number(SCREENSHOT_UPLOAD_FAILURE.state), message: SCREENSHOT_UPLOAD_FAILURE.message };
  planUploads(clock, events, firstAttempts, planOutage(rng, firstAttempts, opts), failure);
  return plan;
}

// ---------------------------------------------------------------------------------------------------
// Bodies

interface RunIds {
  appKey: string;
  idPrefix: string;
}

const pad = (n: number) => String(n).padStart(4, '0');

function recordingFileName(plan: TaskPlan, t0: number, file: number): string {
  const r = plan.recording!;
  const ts = t0 + plan.fileStarts[file]!;
  const { sessionId, roomId } = plan.session;
  // Spec §2.7: mix modes, single modes (with the stream tag), single-user mix.
  if (isMix(r.mode)) return `${sessionId}_${roomId}_${ts}.${r.ext}`;
  if (r.mode === 6) return `${sessionId}_${roomId}_${plan.userId}_${ts}.${r.ext}`;
  return `${sessionId}_${roomId}_${plan.userId}_${r.streamTag}_${ts}.${r.ext}`;
}

function screenshotFileName(plan: TaskPlan, t0: number, file: number): string {
  // Spec §2.11.
  const { sessionId, roomId } = plan.session;
  return `${sessionId}_${roomId}_${plan.userId}_${plan.screenshot!.streamId}_${t0 + plan.fileStarts[file]!}.jpg`;
}

function recordingBody(
  plan: TaskPlan,
  ev: PlannedEvent,
  t0: number,
  ids: RunIds,
  taskId: string,
): Record<string, unknown> {
  const r = plan.recording!;
  const body: Record<string, unknown> = {
    timestamp: t0 + ev.rel,
    type: ev.type,
    appKey: ids.appKey,
    recordId: taskId,
    roomId: plan.session.roomId,
    sessionId: plan.session.sessionId,
    userId: plan.userId,
    mode: r.mode,
    extra: plan.extra,
    code: ev.code,
    errorMessage: ev.message,
  };
  if (ev.type === 1) {
    body.config = { ...r.config };
    body.output = {
      fileName: recordingFileName(plan, t0, 0),
      audioSample: r.audioSample,
      videoResoulation: r.resolution,
    };
  } else if (ev.type === 2 || ev.type === 3) {
    body.output = { fileName: recordingFileName(plan, t0, ev.file!), fileSize: ev.size! };
  } else {
    const fileName = recordingFileName(plan, t0, ev.file!);
    body.output = { fileName, fileUrl: ev.ok ? `${STORAGE_BASE}/recordings/${fileName}` : '' };
  }
  return body;
}

function screenshotBody(
  plan: TaskPlan,
  ev: PlannedEvent,
  t0: number,
  ids: RunIds,
  taskId: string,
): Record<string, unknown> {
  const s = plan.screenshot!;
  const body: Record<string, unknown> = {
    timestamp: t0 + ev.rel,
    type: ev.type,
    appKey: ids.appKey,
    sessionId: plan.session.sessionId,
    roomId: plan.session.roomId,
    imageId: taskId,
    extra: plan.extra,
    code: ev.code,
    errorMessage: ev.message,
  };
  if (ev.type === 1) body.config = { ...s.config };
  else if (ev.type === 3) body.config = { ...s.endConfig };
  else {
    const fileName = screenshotFileName(plan, t0, ev.file!);
    // Spec §7.2: code is 200 when fileState is "10000", otherwise equal to it; errorMessage = fileMsg.
    body.tag = '';
    body.output = ev.ok
      ? { fileName, fileUrl: `${STORAGE_BASE}/shots/${fileName}`, fileState: '10000', fileMsg: 'success' }
      : {
          fileName,
          fileUrl: '',
          fileState: SCREENSHOT_UPLOAD_FAILURE.state,
          fileMsg: SCREENSHOT_UPLOAD_FAILURE.message,
        };
  }
  return body;
}

/** The same body with its keys (and its nested objects' keys) in another order: the same event. */
export function reorderKeys(rng: Random, body: Record<string, unknown>): Record<string, unknown> {
  const keys = rng.shuffle(Object.keys(body));
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    const v = body[k];
    out[k] =
      v !== null && typeof v === 'object' && !Array.isArray(v) ? reorderKeys(rng, v as Record<string, unknown>) : v;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// The run

function makeSessions(rng: Random, count: number): Session[] {
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

function seedTag(seed: string): string {
  return seed.replace(/[^A-Za-z0-9]/g, '').slice(0, 16) || 'seed';
}

export function generateRun(opts: LifecycleOptions): GeneratedRun {
  if (!(opts.compress > 0)) throw new Error('compress must be a positive number');
  const seed = String(opts.seed);
  const rng = createRandom(seed);
  const recordings = Math.max(0, Math.trunc(opts.recordings));
  const screenshots = Math.max(0, Math.trunc(opts.screenshots));
  const sessions = makeSessions(rng, Math.max(1, Math.ceil((recordings + screenshots) / 4)));
  // Modes rotate from a seeded start, so every mode 0..6 appears once there are seven recordings.
  const firstMode = rng.int(0, 6);
  // Tasks start at different moments within half an hour of platform time.
  const spread = 30 * MINUTE;

  const plans: TaskPlan[] = [];
  for (let i = 0; i < recordings; i++) {
    const plan = planRecording(rng, i, (firstMode + i) % 7, rng.pick(sessions), opts);
    plan.offset = rng.int(0, spread);
    plans.push(plan);
  }
  for (let i = 0; i < screenshots; i++) {
    const plan = planScreenshot(rng, i, rng.pick(sessions), opts);
    plan.offset = rng.int(0, spread);
    plans.push(plan);
  }

  let span = 0;
  for (const plan of plans) for (const ev of plan.events) span = Math.max(span, plan.offset + ev.rel);
  // Drawn whether or not a base time is given, so that the rest of the run does not depend on it.
  const slack = rng.int(0, 5 * MINUTE);
  const baseTime = Math.trunc(opts.baseTime ?? (opts.now ?? Date.now()) - span - slack);
  const runId = baseTime.toString(36);
  const ids: RunIds = { appKey: opts.appKey, idPrefix: `${seedTag(seed)}-${runId}` };

  interface Pending extends ScheduledSend {
    seq: number;
  }
  const sends: Pending[] = [];
  let seq = 0;
  for (const plan of plans) {
    const recording = plan.service === 'recording';
    const taskId = `${recording ? 'rec' : 'img'}-${ids.idPrefix}-${pad(plan.index + 1)}`;
    const t0 = baseTime + plan.offset;
    for (const ev of plan.events) {
      const body = recording ? recordingBody(plan, ev, t0, ids, taskId) : screenshotBody(plan, ev, t0, ids, taskId);
      sends.push({
        service: plan.service,
        body,
        at: scheduleOffset(plan.offset + ev.rel, opts.compress),
        taskId,
        duplicate: false,
        seq: seq++,
      });
    }
  }
  const byTime = (a: Pending, b: Pending) =>
    a.at - b.at || (a.body.timestamp as number) - (b.body.timestamp as number) || a.seq - b.seq;
  sends.sort(byTime);

  const duplicates = opts.duplicates ?? 0;
  if (duplicates > 0) {
    const originals = sends.length;
    for (let i = 0; i < originals; i++) {
      const original = sends[i]!;
      if (!rng.chance(duplicates)) continue;
      const copies = rng.chance(0.2) ? 2 : 1;
      for (let c = 0; c < copies; c++) {
        // A repeat comes a little later, as a sender's re-delivery would; half of them with keys reordered.
        const body = rng.chance(0.5) ? reorderKeys(rng, original.body) : structuredClone(original.body);
        sends.push({ ...original, body, at: original.at + rng.int(1, 250), duplicate: true, seq: seq++ });
      }
    }
    sends.sort(byTime);
  }

  const window = opts.reorderWindowMs ?? 0;
  if (window > 0) {
    // Shuffle which send goes out in which slot, group by group of sends less than `window` apart.
    for (let start = 0; start < sends.length; ) {
      let end = start + 1;
      while (end < sends.length && sends[end]!.at - sends[start]!.at < window) end++;
      if (end - start > 1) {
        const slots = sends.slice(start, end).map((s) => s.at);
        const group = rng.shuffle(sends.slice(start, end));
        group.forEach((s, k) => {
          s.at = slots[k]!;
          sends[start + k] = s;
        });
      }
      start = end;
    }
  }

  // The first send goes out at once, whenever in the half-hour spread its task started.
  const origin = sends[0]?.at ?? 0;
  const out: ScheduledSend[] = sends.map(({ seq: _seq, ...send }) => ({ ...send, at: send.at - origin }));
  let firstTs = Infinity;
  let lastTs = -Infinity;
  for (const s of out) {
    const ts = s.body.timestamp as number;
    if (ts < firstTs) firstTs = ts;
    if (ts > lastTs) lastTs = ts;
  }
  return {
    seed,
    baseTime,
    runId,
    sends: out,
    tasks: { recording: recordings, screenshot: screenshots },
    platformSpanMs: out.length ? lastTs - firstTs : 0,
    scheduleSpanMs: out.length ? out[out.length - 1]!.at - out[0]!.at : 0,
  };
}
