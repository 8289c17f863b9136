// The days part's traffic (./days.ts): emulator runs (devkit/emulator) spread over the simulated days, a few
// each day at random moments and one that starts just before midnight, with lost uploads, stalled tasks, storage
// outages that end or outlast the platform's 24 h, failed starts and duplicates; each callback delivered at its
// platform time plus a delay (most within seconds, some minutes late, a few hours late: reordered, and late
// enough to resume a stalled task or unsettle a settled one). Now and then a file whose uploads failed succeeds
// after all, hours later: after its purge warning (then, if its uploads were given up, the give-up's last failure
// wins again), or after its purgeAt (a late success wins over a loss). Pure: the same seed gives the same traffic.
import { generateRun } from '../../devkit/emulator/lifecycles.ts';
import { createRandom, type Random } from '../../devkit/emulator/random.ts';
import { type Body, recordingUpload, screenshotUpload } from '../../lib/platform/bodies.ts';
import { FILE_HOLD_MS } from '../../lib/platform/delivery.ts';
import { SUCCESS } from '../../lib/platform/failures.ts';
import type { Service } from '../../lib/platform/services.ts';

export const DAY_MS = 86_400_000;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

export interface TrafficOptions {
  /** Midnight (UTC) of the first simulated day. */
  start: number;
  /** Days that get new tasks (later days only see the earlier ones out). */
  days: number;
  tasksPerDay: number;
  seed: string;
  appKey: string;
  /** The emulator's `--lose` and `--stall` rates. */
  lose: number;
  stall: number;
}

/** One delivery of a callback to the worker, at the receiver's time `at`. */
export interface Delivery {
  service: Service;
  body: Record<string, unknown>;
  taskId: string;
  at: number;
  duplicate: boolean;
  /** Delivered more than a minute after its platform time. */
  late: boolean;
}

export interface Traffic {
  deliveries: Delivery[];
  tasks: { recording: number; screenshot: number };
  runs: number;
  /** Failed files that succeeded hours later: after their warning, after their purgeAt. */
  lateSuccesses: { afterWarning: number; afterPurge: number };
}

/** A successful upload of the file a failed upload body names, at `timestamp`. */
function successOf(service: Service, failed: Body, timestamp: number): Body {
  const b = failed as Record<string, any>;
  const fileName = String(b.output.fileName);
  if (service === 'recording') return recordingUpload({ ...b } as never, timestamp, SUCCESS, fileName);
  return screenshotUpload({ ...b } as never, timestamp, fileName, null);
}

/** How long after its platform time a callback reaches the worker. */
function delayOf(rng: Random): number {
  const p = rng.next();
  if (p < 0.9) return rng.int(200, 5000);
  if (p < 0.97) return rng.int(MINUTE, 40 * MINUTE);
  return rng.int(HOUR, 12 * HOUR);
}

export function generateTraffic(o: TrafficOptions): Traffic {
  const rng = createRandom(`${o.seed}/days`);
  const perRun = 24;
  const runsPerDay = Math.max(1, Math.round(o.tasksPerDay / perRun));
  const deliveries: Delivery[] = [];
  const tasks = { recording: 0, screenshot: 0 };
  let runs = 0;
  const lateSuccesses = { afterWarning: 0, afterPurge: 0 };
  for (let day = 0; day < o.days; day++) {
    for (let r = 0; r < runsPerDay; r++) {
      const dayStart = o.start + day * DAY_MS;
      // The first run of a day starts before its midnight: its tasks and their purge windows span two days.
      const base = r === 0 ? dayStart + DAY_MS - rng.int(20 * MINUTE, 60 * MINUTE) : dayStart + rng.int(0, DAY_MS - 1);
      const size = Math.min(perRun, Math.max(2, o.tasksPerDay));
      const recordings = Math.ceil(size / 2);
      const run = generateRun({
        seed: `${o.seed}-${day}-${r}`,
        recordings,
        screenshots: size - recordings,
        appKey: o.appKey,
        compress: 3600,
        baseTime: base,
        duplicates: 0.05,
        outage: 0.25,
        giveUp: 0.3,
        failedStarts: 0.05,
        lose: o.lose,
        stall: o.stall,
      });
      runs += 1;
      tasks.recording += run.tasks.recording;
      tasks.screenshot += run.tasks.screenshot;
      // Each task's first failed upload of a file: one task in five with any has one of them succeed at last.
      const firstFailures = new Map<string, { service: Service; body: Body; taskId: string }>();
      const drawn = new Set<string>();
      for (const s of run.sends) {
        const b = s.body as Record<string, any>;
        if (b.type !== 4 || b.code === SUCCESS.code || drawn.has(s.taskId)) continue;
        drawn.add(s.taskId);
        if (rng.chance(0.2)) firstFailures.set(s.taskId, { service: s.service, body: s.body, taskId: s.taskId });
      }
      const sends = [...run.sends];
      for (const f of firstFailures.values()) {
        const afterPurge = rng.chance(0.5);
        const first = f.body.timestamp as number;
        const at = afterPurge
          ? first + FILE_HOLD_MS + rng.int(10 * MINUTE, 2 * HOUR)
          : first + rng.int(22 * HOUR + 10 * MINUTE, 23 * HOUR);
        lateSuccesses[afterPurge ? 'afterPurge' : 'afterWarning'] += 1;
        sends.push({
          service: f.service,
          body: successOf(f.service, f.body, at),
          taskId: f.taskId,
          at: 0,
          duplicate: false,
        });
      }
      for (const s of sends) {
        const delay = delayOf(rng);
        deliveries.push({
          service: s.service,
          body: s.body,
          taskId: s.taskId,
          at: (s.body.timestamp as number) + delay,
          duplicate: s.duplicate,
          late: delay >= MINUTE,
        });
      }
    }
  }
  // Stable: callbacks reaching the receiver at the same moment keep the emulator's order.
  deliveries.sort((a, b) => a.at - b.at);
  return { deliveries, tasks, runs, lateSuccesses };
}
