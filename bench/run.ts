// `npm run bench`: measures the system on this machine and writes bench/RESULTS.md and bench/results.json.
//   --quick          tiny sizes, a few seconds per part (nothing is written unless --out is given)
//   --only <parts>   comma-separated: ingest, cold-start, worker, api, end-to-end, cost, archive
//   --out <dir>      where to write RESULTS.md and results.json (default bench/ for a full run)
// Every server the bench starts listens on 127.0.0.1 and is stopped before it exits.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { apiSizes, benchApi } from './api.ts';
import { benchColdStart, coldStartSizes } from './cold-start.ts';
import { PRICES, costPerMillion, loadDeployedSettings, type CostInputs } from './cost.ts';
import { benchIngest, ingestSizes } from './ingest.ts';
import {
  PART_NAMES,
  describeMachine,
  renderMarkdown,
  renderSummary,
  writeReport,
  type BenchResults,
  type CostResult,
  type PartName,
} from './report.ts';
import { benchWorker, workerSizes } from './worker.ts';
import { archiveSizes, benchArchive } from './archive.ts';
import { errorSentence } from '../lib/text.ts';

const benchDir = fileURLToPath(new URL('.', import.meta.url));
/** A run that has not finished by then is stopped: the bench must end by itself. */
const WATCHDOG_MS = 30 * 60_000;

function usage(): string {
  return `usage: npm run bench -- [--quick] [--only ${PART_NAMES.join(',')}] [--out <dir>]`;
}

function parseOptions(argv: string[]): { quick: boolean; parts: PartName[]; out: string | null } {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string', multiple: true },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${usage()}\n`);
    process.exit(0);
  }
  let parts = [...PART_NAMES];
  if (values.only?.length) {
    const asked = values.only
      .flatMap((v) => v.split(','))
      .map((v) => v.trim())
      .filter(Boolean);
    const unknown = asked.filter((p) => !PART_NAMES.includes(p as PartName));
    if (unknown.length) throw new Error(`unknown part(s) ${unknown.join(', ')}; ${usage()}`);
    parts = PART_NAMES.filter((p) => asked.includes(p));
  }
  return { quick: values.quick ?? false, parts, out: values.out ?? null };
}

const runStarted = performance.now();
function progress(line: string): void {
  process.stderr.write(`[bench ${((performance.now() - runStarted) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);
}

/** The cost's measured inputs: from this run, else from the results.json of an earlier full run. */
function costInputs(
  results: BenchResults,
  batchSize: number,
):
  | {
      from: string;
      inputs: CostInputs;
      lowTraffic: CostInputs;
      baseline: CostInputs;
      contention: { writeUnits: number; readUnits: number; recordConcurrency: number };
    }
  | string {
  let ingest = results.ingest;
  let worker = results.worker;
  let from = 'this run';
  if (!ingest || !worker) {
    const previous = join(benchDir, 'results.json');
    if (!existsSync(previous)) return 'it needs the ingest and worker parts, in this run or in bench/results.json';
    const earlier = JSON.parse(readFileSync(previous, 'utf8')) as Partial<BenchResults>;
    ingest ??= earlier.ingest;
    worker ??= earlier.worker;
    if (!ingest || !worker) return 'bench/results.json lacks the ingest or worker part';
    from =
      `ingest and worker figures from ${results.ingest ? 'this run' : earlier.date} and ` +
      `${results.worker ? 'this run' : earlier.date}`;
  }
  if (worker.batchSize !== batchSize)
    return `the worker part ran batches of ${worker.batchSize}, serverless.yml says ${batchSize}`;
  const mix = worker.capacity.mix;
  // Full FIFO batches: the realistic mix through processBatch (every read included, task events on).
  const full = worker.batchCapacity;
  return {
    from,
    inputs: {
      ingestMsPerCallback: ingest.handlerMs.median,
      workerMsPerBatch: worker.workerBatchMs.median,
      batchSize,
      ingestMemoryMb: 0,
      workerMemoryMb: 0,
      writeUnitsPerCallback: full ? full.tableWcu + full.indexWcu : mix.tableWcu + mix.indexWcu,
      // The write path's reads, and the task reads task events need (deployed, the stack's topic is on).
      readUnitsPerCallback: full ? full.rcu : mix.rcu + (mix.eventRcu ?? 0),
      publishesPerCallback: full ? full.publishes : mix.publishes,
    },
    // A batch of one (the low-traffic case): the units of part 3's one-at-a-time measure, a worker invocation
    // and a receive and delete per callback, the worker's time per record taken as a batch's over its size.
    lowTraffic: {
      ingestMsPerCallback: ingest.handlerMs.median,
      workerMsPerBatch: worker.workerBatchMs.median / batchSize,
      batchSize: 1,
      ingestMemoryMb: 0,
      workerMemoryMb: 0,
      writeUnitsPerCallback: mix.tableWcu + mix.indexWcu,
      readUnitsPerCallback: mix.rcu + (mix.eventRcu ?? 0),
      publishesPerCallback: mix.publishes,
    },
    baseline: {
      ingestMsPerCallback: ingest.bareSendMs.median,
      workerMsPerBatch: worker.barePutBatchMs.median,
      batchSize,
      ingestMemoryMb: 0,
      workerMemoryMb: 0,
      writeUnitsPerCallback: mix.bareWcu,
      readUnitsPerCallback: 0,
      publishesPerCallback: 0,
    },
    // The throughput run applies 5 records of a batch at once: conflicting writes and their retries
    // cost more units than the one-at-a-time capacity run (its index writes are taken from the latter).
    contention: {
      writeUnits: worker.loggedWcuPerCallback + (full ? full.indexWcu : mix.indexWcu),
      readUnits: worker.loggedRcuPerCallback + (mix.eventRcu ?? 0),
      recordConcurrency: worker.concurrency,
    },
  };
}

function runCost(results: BenchResults): CostResult | string {
  const settings = loadDeployedSettings();
  const found = costInputs(results, settings.batchSize);
  if (typeof found === 'string') return found;
  const memory = { ingestMemoryMb: settings.ingestMemoryMb, workerMemoryMb: settings.workerMemoryMb };
  const inputs = { ...found.inputs, ...memory };
  const baselineInputs = { ...found.baseline, ...memory };
  const breakdown = costPerMillion(inputs);
  const baseline = costPerMillion(baselineInputs);
  const contended = costPerMillion({
    ...inputs,
    writeUnitsPerCallback: found.contention.writeUnits,
    readUnitsPerCallback: found.contention.readUnits,
  });
  // Without the task events (a stack without their topic): no SNS publishes, no task reads for them (at full
  // batches they are not told apart: a file's spilled keys, a small share of the reads).
  const eventReads = results.worker?.batchCapacity ? 0 : (results.worker?.capacity.mix.eventRcu ?? 0);
  const withoutEvents = costPerMillion({
    ...inputs,
    readUnitsPerCallback: inputs.readUnitsPerCallback - eventReads,
    publishesPerCallback: 0,
  });
  const lowTraffic = costPerMillion({ ...found.lowTraffic, ...memory });
  return {
    lowTrafficBatches: lowTrafficBatches(results, { ...found.lowTraffic, ...memory }),
    settings,
    prices: PRICES,
    withoutEventsUsd: withoutEvents.totalUsd,
    lowTraffic: { inputs: { ...found.lowTraffic, ...memory }, totalUsd: lowTraffic.totalUsd },
    inputsFrom: found.from,
    inputs,
    breakdown,
    baselineInputs,
    baseline,
    ratio: breakdown.totalUsd / baseline.totalUsd,
    underContention: { ...found.contention, totalUsd: contended.totalUsd },
  };
}

/**
 * Low traffic, batches of 1, 2 or 3 callbacks: this design's total (the units of part 3's runs in batches of at most
 * that many; the worker's time per record as at full batches).
 */
function lowTrafficBatches(results: BenchResults, one: CostInputs): NonNullable<CostResult['lowTrafficBatches']> {
  return (results.worker?.smallBatchCapacity ?? []).map((measured) => {
    const inputs: CostInputs = {
      ...one,
      batchSize: measured.batchSize,
      workerMsPerBatch: one.workerMsPerBatch * measured.batchSize,
      writeUnitsPerCallback: measured.tableWcu + measured.indexWcu,
      readUnitsPerCallback: measured.rcu,
      publishesPerCallback: measured.publishes,
    };
    return { batchSize: measured.batchSize, inputs, totalUsd: costPerMillion(inputs).totalUsd };
  });
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const size = options.quick ? 'quick' : 'full';
  const full = !options.quick && options.parts.length === PART_NAMES.length;
  const outDir = options.out ? resolve(options.out) : full ? benchDir : null;
  const workDir = mkdtempSync(join(tmpdir(), 'rtc-bench-'));
  const watchdog = setTimeout(() => {
    progress(`still running after ${WATCHDOG_MS / 60_000} minutes: stopping`);
    rmSync(workDir, { recursive: true, force: true });
    process.exit(2);
  }, WATCHDOG_MS);
  watchdog.unref();

  const results: BenchResults = {
    date: new Date().toISOString(),
    mode: size,
    parts: options.parts,
    durationS: 0,
    machine: describeMachine(),
    missing: {},
  };
  progress(
    `${size} run of ${options.parts.join(', ')} on ${results.machine.cpu} (${results.machine.cores} cores), load ` +
      `${results.machine.loadAverage.start}`,
  );

  const attempt = async (part: PartName, run: () => Promise<void>) => {
    if (!options.parts.includes(part)) return;
    try {
      await run();
    } catch (err) {
      const message = errorSentence(err);
      results.missing[part] = `It failed: ${message.split('\n')[0]}`;
      process.exitCode = 1;
      progress(`${part} failed: ${message}`);
    }
  };

  try {
    await attempt('ingest', async () => {
      results.ingest = await benchIngest(ingestSizes[size], progress);
    });
    await attempt('cold-start', async () => {
      results.coldStart = await benchColdStart(coldStartSizes[size], workDir, progress);
    });
    await attempt('worker', async () => {
      results.worker = await benchWorker(workerSizes[size], progress);
    });
    await attempt('api', async () => {
      results.api = await benchApi(apiSizes[size], progress);
    });
    await attempt('end-to-end', async () => {
      // Loaded here, so that the other parts still run if the local stack cannot even be imported.
      let e2e: typeof import('./end-to-end.ts');
      try {
        e2e = await import('./end-to-end.ts');
      } catch (err) {
        throw new Error(
          `the local stack, the sender emulator or the verifier cannot be loaded (${errorSentence(err)})`,
        );
      }
      results.endToEnd = await e2e.benchEndToEnd(e2e.endToEndSizes[size], workDir, progress);
      if (!results.endToEnd.verify.ok) process.exitCode = 1;
    });
    await attempt('cost', async () => {
      const cost = runCost(results);
      if (typeof cost === 'string') throw new Error(cost);
      results.cost = cost;
    });
    await attempt('archive', async () => {
      results.archive = await benchArchive(archiveSizes[size], progress);
    });
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }

  results.durationS = (performance.now() - runStarted) / 1000;
  results.machine.loadAverage.end = Math.round(loadavg()[0]! * 100) / 100;
  process.stdout.write(`\n${renderSummary(results)}\n\n`);
  if (outDir) {
    const written = writeReport(results, outDir);
    const shown = (path: string) => (path.startsWith(process.cwd()) ? relative(process.cwd(), path) : path);
    progress(`wrote ${shown(written.markdown)} and ${shown(written.json)}`);
  } else {
    process.stdout.write(renderMarkdown(results));
    progress('nothing written (a quick or partial run); pass --out <dir> to keep it');
  }
}

main()
  .catch((err) => {
    process.stderr.write(`bench: ${errorSentence(err)}\n`);
    process.exitCode = 1;
  })
  // SDK clients and sockets may keep the event loop alive for a while; every server is closed by now.
  .finally(() => process.exit());
