// Part 4, end to end: the local stack (`callbacks dev`: HTTP gateway + the deployed ingest handler,
// fauxqs, the event-source poller + the deployed worker handler, dynalite) started in this process, fed
// by the sender emulator (`callbacks emulate`: both services, duplicates, reordering, storage outages),
// then checked by the verifier (`callbacks verify`). Measured: the sender's ack latency p50/p99, the time
// until the queue has drained after the last ack, and whether every task matches. Baseline: `GET /health`
// on the same server, idle before the run and sampled during it.
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { openLocal } from '../devkit/local/target.ts';
import { expectedTasks } from '../devkit/emulator/expect.ts';
import { createRandom } from '../devkit/emulator/random.ts';
import { SENDER_DEFAULTS, sendAll, type SendSummary } from '../devkit/emulator/sender.ts';
import { startLocalStack } from '../devkit/local/stack.ts';
import { verifyTasks } from '../devkit/verify/verify.ts';
import { BENCH_APP_KEY, STRESS_FAULTS, generateMix } from './callbacks.ts';
import { percentile } from './stats.ts';

export interface EndToEndSizes {
  callbacks: number;
  /** Idle GET /health requests before the run, at the sender's concurrency. */
  healthRequests: number;
  /** Longest wait for the queue to drain, and then for the tasks to match. */
  timeoutMs: number;
}

export const endToEndSizes = {
  full: { callbacks: 10_000, healthRequests: 2000, timeoutMs: 300_000 },
  quick: { callbacks: 300, healthRequests: 100, timeoutMs: 60_000 },
} satisfies Record<string, EndToEndSizes>;

const SECRET = 'bench-e2e-secret';
/** One GET /health in flight every this many milliseconds while the callbacks are sent. */
const HEALTH_SAMPLE_MS = 20;

export interface Latency {
  p50: number;
  p99: number;
  n: number;
}

export interface EndToEndResult {
  callbacks: number;
  duplicates: number;
  tasks: number;
  concurrency: number;
  faults: typeof STRESS_FAULTS;
  send: Pick<
    SendSummary,
    | 'delivered'
    | 'undelivered'
    | 'requests'
    | 'status2xx'
    | 'status4xx'
    | 'status5xx'
    | 'networkErrors'
    | 'retried'
    | 'durationMs'
  >;
  /** The sender's own figures (nearest-rank percentiles of every attempt). */
  ackLatencyMs: { p50: number; p99: number };
  healthIdleMs: Latency;
  healthUnderLoadMs: Latency;
  ratios: {
    ackOverIdleHealth: { p50: number; p99: number };
    ackOverLoadedHealth: { p50: number; p99: number };
  };
  /** From the last ack until the queue held nothing and no batch was in progress. */
  drainAfterLastAckMs: number | null;
  /** From the first send until drained. */
  totalMs: number | null;
  /** Callbacks acknowledged and applied per second over the whole run. */
  throughputPerSecond: number | null;
  poller: { batches: number; records: number; meanBatch: number; largestBatch: number; failedRecords: number };
  deadLetters: number;
  verify: {
    ok: boolean;
    checked: number;
    matched: number;
    drained: boolean | null;
    timedOut: boolean;
    firstDiffs: string[];
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function getHealth(url: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(10_000) });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`GET /health answered ${res.status}`);
  return performance.now() - started;
}

function latency(values: number[]): Latency {
  return { p50: percentile(values, 50), p99: percentile(values, 99), n: values.length };
}

export async function benchEndToEnd(
  sizes: EndToEndSizes,
  workDir: string,
  progress: (line: string) => void = () => {},
): Promise<EndToEndResult> {
  const home = mkdtempSync(join(workDir, 'stack-'));
  // cwd: a folder of its own, so that the stack file announcing this stack never meets a `callbacks dev`
  // running in the project folder.
  const stack = await startLocalStack({
    port: 0,
    host: '127.0.0.1',
    memory: true,
    cwd: home,
    quiet: true,
    secrets: { [BENCH_APP_KEY]: [SECRET] },
    signatureMode: 'enforce',
  });
  const target = openLocal(stack.info);
  try {
    const concurrency = SENDER_DEFAULTS.concurrency;
    const sends = generateMix(sizes.callbacks, 'bench-e2e', STRESS_FAULTS);
    const tasks = new Set(sends.map((s) => s.taskId)).size;

    // Idle baseline: GET /health at the sender's concurrency.
    await Promise.all(Array.from({ length: 20 }, () => getHealth(stack.url)));
    const idle: number[] = [];
    let issued = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (issued < sizes.healthRequests) {
          issued += 1;
          idle.push(await getHealth(stack.url));
        }
      }),
    );
    progress(`end to end: ${idle.length} idle GET /health`);

    // Under load: one GET /health at a time, every HEALTH_SAMPLE_MS, while the callbacks are sent.
    const loaded: number[] = [];
    let sending = true;
    const sampler = (async () => {
      while (sending) {
        loaded.push(await getHealth(stack.url));
        await sleep(HEALTH_SAMPLE_MS);
      }
    })();
    const started = performance.now();
    const report = await sendAll({
      url: stack.url,
      sends,
      random: createRandom('bench-e2e/sender'),
      concurrency,
      sign: 'header',
      secret: SECRET,
    });
    const lastAck = performance.now();
    sending = false;
    await sampler;
    progress(
      `end to end: ${report.summary.delivered}/${sends.length} callbacks acknowledged in ` +
        `${(report.summary.durationMs / 1000).toFixed(1)} s`,
    );

    const isDrained = async () => {
      const d = await target.queue.depth();
      return d.visible + d.inFlight + d.delayed === 0 && stack.poller.busy() === 0;
    };
    let drainedAt: number | null = null;
    while (performance.now() - lastAck < sizes.timeoutMs) {
      if (await isDrained()) {
        drainedAt = performance.now();
        break;
      }
      await sleep(50);
    }
    progress(
      drainedAt === null
        ? 'end to end: the queue did not drain in time'
        : `end to end: queue drained ${((drainedAt - lastAck) / 1000).toFixed(1)} s after the last ack`,
    );

    const expected = expectedTasks(report.results);
    const verdict = await verifyTasks({
      expected,
      getTask: (id, appKey) => target.tasks.getTask(id, appKey),
      waitForDrain: isDrained,
      timeoutMs: sizes.timeoutMs,
    });
    progress(
      `end to end: verify ${verdict.ok ? 'passed' : 'FAILED'} (${verdict.matched}/${verdict.checked} tasks match)`,
    );
    const dlq = await target.dlq.depth();

    const s = report.summary;
    if (s.latencyP50Ms === null || s.latencyP99Ms === null) throw new Error('the sender measured no latency');
    const healthIdleMs = latency(idle);
    const healthUnderLoadMs = latency(loaded.length > 0 ? loaded : idle);
    const stats = stack.poller.stats;
    return {
      callbacks: sends.length,
      duplicates: sends.filter((x) => x.duplicate).length,
      tasks,
      concurrency,
      faults: STRESS_FAULTS,
      send: {
        delivered: s.delivered,
        undelivered: s.undelivered,
        requests: s.requests,
        status2xx: s.status2xx,
        status4xx: s.status4xx,
        status5xx: s.status5xx,
        networkErrors: s.networkErrors,
        retried: s.retried,
        durationMs: s.durationMs,
      },
      ackLatencyMs: { p50: s.latencyP50Ms, p99: s.latencyP99Ms },
      healthIdleMs,
      healthUnderLoadMs,
      ratios: {
        ackOverIdleHealth: { p50: s.latencyP50Ms / healthIdleMs.p50, p99: s.latencyP99Ms / healthIdleMs.p99 },
        ackOverLoadedHealth: {
          p50: s.latencyP50Ms / healthUnderLoadMs.p50,
          p99: s.latencyP99Ms / healthUnderLoadMs.p99,
        },
      },
      drainAfterLastAckMs: drainedAt === null ? null : drainedAt - lastAck,
      totalMs: drainedAt === null ? null : drainedAt - started,
      throughputPerSecond: drainedAt === null ? null : s.delivered / ((drainedAt - started) / 1000),
      poller: {
        batches: stats.batches,
        records: stats.records,
        meanBatch: stats.batches > 0 ? stats.records / stats.batches : 0,
        largestBatch: stats.largestBatch,
        failedRecords: stats.failed,
      },
      deadLetters: dlq.visible + dlq.inFlight + dlq.delayed,
      verify: {
        ok: verdict.ok,
        checked: verdict.checked,
        matched: verdict.matched,
        drained: verdict.drained,
        timedOut: verdict.timedOut,
        firstDiffs: verdict.diffs.slice(0, 5).flatMap((d) => d.lines.slice(0, 3)),
      },
    };
  } finally {
    await target.close();
    await stack.stop();
    rmSync(home, { recursive: true, force: true });
  }
}
