// The days part's traffic (./days.ts): emulator runs (devkit/emulator) spread over the simulated days, a few
// each day at random moments and one that starts just before midnight, with lost uploads, stalled tasks, storage
// outages that end or outlast the platform's 24 h, failed starts and duplicates; each callback delivered at its
// platform time plus a delay (most within seconds, some minutes late, a few hours late: reordered, and late
// enough to resume a stalled task or unsettle a settled one). Pure: the same seed gives the same traffic.
import { generateRun } from '../../devkit/emulator/lifecycles.ts';
import { createRandom, type Random } from '../../devkit/emulator/random.ts';
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
      for (const s of run.sends) {
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
  return { deliveries, tasks, runs };
}
