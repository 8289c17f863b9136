// The soak's chaos part: the header counts' chaos run (test/reliability/support/counts-chaos.ts) over thousands
// of seeds, several at a time, on a DynamoDB emulator of its own. Every seed's problems are kept (the first
// ones printed); the part passes when no seed has any.
import { startDynamo } from '../../devkit/local/dynamo.ts';
import { setLogSink } from '../../lib/log.ts';
import { type ChaosOptions, type ChaosOutcome, runCountsChaos } from '../reliability/support/counts-chaos.ts';

export interface ChaosFigures {
  seeds: number;
  firstSeed: number;
  failedSeeds: number[];
  tasks: number;
  deliveries: number;
  batches: number;
  deaths: number;
  staleAnswers: number;
  /** Writes refused (or landed, their answer lost) on warm workers. */
  throttles: number;
  /** Messages dead-lettered, then redriven. */
  deadLetters: number;
  /** Forged bodies under genuine signatures. */
  forgeries: number;
  wallS: number;
  /** CPU time of the whole process while the part ran (user + system), seconds. */
  cpuS: number;
  /** The first problems found, seed by seed. */
  problems: string[];
}

export async function runChaosSeeds(opts: {
  seeds: number;
  firstSeed?: number;
  atOnce?: number;
  options?: Partial<ChaosOptions>;
  onProgress?: (done: number, failed: number) => void;
}): Promise<ChaosFigures> {
  const firstSeed = opts.firstSeed ?? 1_000_000;
  const db = await startDynamo('tasks-chaos');
  const restore = setLogSink(() => undefined);
  const cpuStart = process.cpuUsage();
  const started = Date.now();
  const outcomes: ChaosOutcome[] = [];
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: opts.atOnce ?? 8 }, async () => {
        while (next < opts.seeds) {
          const outcome = await runCountsChaos(firstSeed + next++, db, opts.options);
          outcomes.push(outcome);
          if (outcomes.length % 100 === 0)
            opts.onProgress?.(outcomes.length, outcomes.filter((o) => o.problems.length).length);
        }
      }),
    );
  } finally {
    setLogSink(restore);
    await db.stop();
  }
  const cpu = process.cpuUsage(cpuStart);
  const sum = (pick: (o: ChaosOutcome) => number) => outcomes.reduce((n, o) => n + pick(o), 0);
  const failed = outcomes.filter((o) => o.problems.length > 0).sort((a, b) => a.seed - b.seed);
  return {
    seeds: outcomes.length,
    firstSeed,
    failedSeeds: failed.map((o) => o.seed),
    tasks: sum((o) => o.tasks),
    deliveries: sum((o) => o.deliveries),
    batches: sum((o) => o.batches),
    deaths: sum((o) => o.deaths),
    staleAnswers: sum((o) => o.staleAnswers),
    throttles: sum((o) => o.throttles),
    deadLetters: sum((o) => o.deadLetters),
    forgeries: sum((o) => o.forgeries),
    wallS: (Date.now() - started) / 1000,
    cpuS: (cpu.user + cpu.system) / 1e6,
    problems: failed.slice(0, 5).flatMap((o) => o.problems.slice(0, 3).map((p) => `seed ${o.seed}: ${p}`)),
  };
}

/** The part of test/soak/RESULTS.md these figures make. */
export function chaosMarkdown(f: ChaosFigures): string[] {
  const n = (v: number) => v.toLocaleString('en-US');
  const rows: [string, string][] = [
    ['seeds run / **failed**', `${n(f.seeds)} (${n(f.firstSeed)} on) / **${n(f.failedSeeds.length)}**`],
    ['tasks / deliveries (duplicates included)', `${n(f.tasks)} / ${n(f.deliveries)}`],
    ['batches / worker deaths mid-batch (the batch back whole)', `${n(f.batches)} / ${n(f.deaths)}`],
    ['stale answers to eventually consistent reads', n(f.staleAnswers)],
    [
      'writes throttled on warm workers / messages dead-lettered, then redriven',
      `${n(f.throttles)} / ${n(f.deadLetters)}`,
    ],
    ['forged bodies under genuine signatures (applied to no task)', n(f.forgeries)],
    [
      'time: wall / CPU of the process / CPU per seed',
      `${f.wallS.toFixed(0)} s / ${f.cpuS.toFixed(0)} s / ${((f.cpuS / Math.max(1, f.seeds)) * 1000).toFixed(0)} ms`,
    ],
    ['failed seeds', f.failedSeeds.length ? f.failedSeeds.slice(0, 20).join(', ') : 'none'],
  ];
  return [
    'Each seed: up to 3 random tasks of both services with duplicates, in batches shaped as SQS FIFO delivers ' +
      'them, three workers at once, random DynamoDB latency, stale reads, writes throttled on warm workers, ' +
      'workers dying before or after a random write at any receive (maxReceiveCount 3), forged bodies under ' +
      'genuine signatures claimed at the ingest and met by the worker in any order, dead letters redriven ' +
      "and nothing else; every task equal to `reduceTask`, every header's counts equal to a recount, events " +
      'between MUST and MAY, event sequence numbers growing, every fact an event reports stored.',
    '',
    '| Figure | Value |',
    '|---|---|',
    ...rows.map(([k, v]) => `| ${k} | ${v} |`),
  ];
}
