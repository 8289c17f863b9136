// The bench's output: `bench/RESULTS.md` for people and `bench/results.json` beside it for tools. Every
// figure is printed beside its baseline, measured in the same run; ratios are figure / baseline.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, platform, arch, release, totalmem } from 'node:os';
import { join } from 'node:path';
import type { ApiResult } from './api.ts';
import type { ColdStartResult } from './cold-start.ts';
import type { PRICES, CostBreakdown, CostInputs, DeployedSettings } from './cost.ts';
import type { EndToEndResult } from './end-to-end.ts';
import type { IngestResult } from './ingest.ts';
import { summarize, type Summary } from './stats.ts';
import { batchSection, kindTable, storeSections } from './report-store.ts';
import type { WorkerResult } from './worker.ts';
import type { ArchiveBenchResult } from './archive.ts';
import { archiveSection, archiveSummaryRows } from './archive-report.ts';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  freeMemoryGiB: number;
  node: string;
  os: string;
  /** 1-minute load average when the run started and when it ended: other work on the machine shows here. */
  loadAverage: { start: number; end: number | null };
}

export function describeMachine(): Machine {
  const list = cpus();
  return {
    cpu: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    freeMemoryGiB: Math.round((freemem() / 2 ** 30) * 10) / 10,
    node: process.version,
    os: `${platform()} ${release()} ${arch()}`,
    loadAverage: { start: Math.round(loadavg()[0]! * 100) / 100, end: null },
  };
}

export interface CostResult {
  settings: DeployedSettings;
  prices: typeof PRICES;
  /** Where the measured inputs come from: this run, or an earlier results.json. */
  inputsFrom: string;
  inputs: CostInputs;
  breakdown: CostBreakdown;
  baselineInputs: CostInputs;
  baseline: CostBreakdown;
  ratio: number;
  /** The total without task events: no SNS publishes, no task reads for them. */
  withoutEventsUsd?: number;
  /** The total at a batch of one (the low-traffic case: part 3's one-at-a-time units). */
  lowTraffic?: { inputs: CostInputs; totalUsd: number };
  /**
   * Low traffic, 1 to 3 callbacks a batch: the total of this design at the same
   * traffic (its units, its time per record and its prices, at that batch size).
   */
  lowTrafficBatches?: { batchSize: number; inputs: CostInputs; totalUsd: number }[];
  /** The total with the units seen when records of a batch are applied concurrently (part 3's throughput run). */
  underContention: { writeUnits: number; readUnits: number; recordConcurrency: number; totalUsd: number };
}

export type PartName = 'ingest' | 'cold-start' | 'worker' | 'api' | 'end-to-end' | 'cost' | 'archive';
export const PART_NAMES: readonly PartName[] = [
  'ingest',
  'cold-start',
  'worker',
  'api',
  'end-to-end',
  'cost',
  'archive',
];

export interface BenchResults {
  date: string;
  mode: 'full' | 'quick';
  parts: PartName[];
  durationS: number;
  machine: Machine;
  ingest?: IngestResult;
  coldStart?: ColdStartResult;
  worker?: WorkerResult;
  api?: ApiResult;
  endToEnd?: EndToEndResult;
  cost?: CostResult;
  archive?: ArchiveBenchResult;
  /** Parts that could not run, and why. */
  missing: Partial<Record<PartName, string>>;
}

// ---------------------------------------------------------------------------------------------------
// Formatting

/** Three significant digits, without exponent; thousands separated. */
export function num(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 10 ** digits) return Math.round(value).toLocaleString('en-US');
  return Number(value.toPrecision(digits)).toLocaleString('en-US', { maximumFractionDigits: 6 });
}

const range = (s: Summary, unit = '') => `${num(s.median)}${unit} [${num(s.min)}–${num(s.max)}]`;
const ratio = (s: Summary) => `**${num(s.median)}×** [${num(s.min)}–${num(s.max)}]`;
const x = (n: number) => `**${num(n)}×**`;
const usd = (n: number) => (n >= 0.01 ? `$${n.toFixed(3)}` : `$${n.toFixed(5)}`);
const bytes = (n: number) => Math.round(n).toLocaleString('en-US');

function table(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

// ---------------------------------------------------------------------------------------------------
// Sections

function ingestSection(r: IngestResult): string {
  return [
    '## 1. Ingest cost',
    '',
    `The ${r.fixtures} fixtures (${r.bodyBytes.min}–${r.bodyBytes.max} bytes), each as a signed API Gateway v2 ` +
      `event, through ` +
      '`handleCallbackRequest` (route, body, minimal check, SHA-1 signature, the replay claim, SendMessage with its ' +
      'attributes, one log line) ' +
      "with the ingest's own SQS and DynamoDB clients against fauxqs and dynalite in the same process. Baseline: a " +
      'bare `SendMessage` of the same body ' +
      `on the same client and queue. Beside them, the replay claim alone, as the handler makes it (the full parse, ` +
      'the delivery item, its conditional `PutItem`, on the same table client): the time it adds to the handler, ' +
      'over a bare `PutItem` of the same item. ' +
      `${r.rounds} rounds of ${r.perRound} callbacks per side, the sides ` +
      `alternating (ABCD, DCBA, …); ` +
      'one ratio per round.',
    '',
    table(
      ['figure', 'per callback, median [min–max]', 'baseline', 'baseline per callback', 'ratio'],
      [
        [
          'handler time, claim and SendMessage included',
          range(r.handlerMs, ' ms'),
          'bare `SendMessage` of the same body',
          range(r.bareSendMs, ' ms'),
          ratio(r.ratio),
        ],
        [
          'the replay claim alone (added to the handler)',
          range(r.claimMs, ' ms'),
          'bare `PutItem` of the same delivery item',
          range(r.barePutMs, ' ms'),
          ratio(r.claimRatio),
        ],
        [
          'handler CPU, queue and table answered at once',
          range(r.cpu.handlerUs, ' µs'),
          '`JSON.parse` of the same body',
          range(r.cpu.jsonParseUs, ' µs'),
          ratio(r.cpu.ratio),
        ],
        [
          'of which the replay claim, table answered at once',
          range(r.cpu.claimUs, ' µs'),
          '`JSON.parse` of the same body',
          range(r.cpu.jsonParseUs, ' µs'),
          ratio(r.cpu.claimRatio),
        ],
      ],
    ),
    '',
    `CPU is \`process.cpuUsage()\` (user + system, the whole process) over ${r.cpu.perRound} handler calls per round ` +
      `(${r.cpu.rounds} rounds), the queue and table clients replaced by ones that answer at once; the baseline ` +
      `parses each body 20 times as often, ` +
      `so that the clock's granularity does not matter. The handler's log line is serialised ` +
      `(${num(r.logBytesPerCallback)} bytes per callback) but not written.`,
    '',
    `The claim's delivery item is ${num(r.claimItem.meanBytes)} bytes on average (at most ` +
      `${bytes(r.claimItem.maxBytes)}): its conditional \`PutItem\` costs ${num(r.claimItem.writeUnits)} write ` +
      `unit and ${num(r.claimItem.indexWriteUnits)} in the \`byTaskTime\` index, the units the worker's delivery ` +
      'put cost before (part 3): for a callback the ingest claimed, the worker writes no delivery.',
  ].join('\n');
}

function coldStartSection(r: ColdStartResult): string {
  const rows = r.bundles.map((b) => [
    b.role === 'baseline' ? `${b.name} (baseline)` : `**${b.name}**`,
    bytes(b.bytes),
    bytes(b.zipBytes),
    range(b.importMs, ' ms'),
    range(b.processMs, ' ms'),
    b.baseline ?? '—',
    b.ratios ? x(b.ratios.bytes) : '—',
    b.ratios ? x(b.ratios.zipBytes) : '—',
    b.ratios ? ratio(b.ratios.importMs) : '—',
    b.ratios ? ratio(b.ratios.processMs) : '—',
  ]);
  return [
    '## 2. Cold start',
    '',
    'Every artifact bundled as `npm run build` bundles it (same entries, `esbuildOptions` and zip writer), next to ' +
      'three baselines ' +
      'built the same way from `bench/baselines/`: a handler that only calls SQS `SendMessage` (for the ingest), ' +
      'one that only calls ' +
      'DynamoDB `PutItem` (for the worker) and one that only calls DynamoDB `GetItem` (for the read API). ' +
      `Each bundle is imported by a fresh \`${r.nodeVersion}\` process with the functions' ` +
      `environment, ${r.repeats} times, the bundles taking turns; ratios are per repetition.`,
    '',
    table(
      [
        'bundle',
        'bytes',
        'zip bytes',
        '`await import()`, median [min–max]',
        'process start → imported',
        'baseline',
        'bytes ratio',
        'zip ratio',
        'import ratio',
        'start → imported ratio',
      ],
      rows,
    ),
    '',
    "A Lambda cold start adds the runtime's own start and the download of the zip; the import is the part the " +
      'bundle decides.',
  ].join('\n');
}

function apiSection(r: ApiResult): string {
  const rows = r.requests.map((q) => [
    `\`${q.request}\`: ${q.label}`,
    `${q.items} ${q.items === 1 ? 'item' : 'items'}, ${bytes(q.responseBytes)} B`,
    Object.entries(q.dynamoRequests)
      .map(([op, n]) => `${n} ${op}`)
      .join(', '),
    range(q.ms, ' ms'),
    ratio(q.ratio),
  ]);
  return [
    '## 4. Read API',
    '',
    `${r.tasks} tasks and a screenshot task of ${r.files} images, written by the worker's logic, then each request ` +
      `below as an ` +
      "API Gateway v2 event through `handleApiRequest` (route, query parameters, the read API's own DynamoDB " +
      'reader, JSON) against ' +
      `dynalite in the same process. Baseline: a bare strongly consistent \`GetItem\` of one task's header on the ` +
      `same client, the least ` +
      `any read of a task costs (${range(r.bareGetItemMs, ' ms')}). ${r.rounds} rounds of ${r.perRound} requests ` +
      `per kind, the two sides alternating; ` +
      'one ratio per round.',
    '',
    table(
      ['request', 'answer', 'DynamoDB requests', 'time per request, median [min–max]', 'ratio to bare GetItem'],
      rows,
    ),
    '',
    'On AWS each DynamoDB request is a network round trip of a few milliseconds: a request costs about its DynamoDB ' +
      'requests ' +
      'times that, plus the handler time shown here.',
    ...(r.taskSize ? ['', taskSizeTable(r.taskSize)] : []),
  ].join('\n');
}

/** Read units and requests of the same reads on tasks of a few images and of many. */
function taskSizeTable(t: NonNullable<ApiResult['taskSize']>): string {
  const cost = (c: { rcu: number; requests: number }) => `${num(c.rcu)} RCU, ${c.requests} requests`;
  const { small, large, listed, listedLarge } = t.sizes;
  return [
    `Task size: the same reads on screenshot tasks of ${small} images and of ${large} (a listing: ${listed} tasks ` +
      `of ${small} images, then of ${listedLarge}), the tasks written in the store's own item shapes. Target: the ` +
      'large within 1.2× the small.',
    '',
    table(
      ['request', `${small} images`, 'large', 'read units, large / small'],
      t.reads.map((r) => [`\`${r.request}\`: ${r.label}`, cost(r.small), cost(r.large), ratio1(r.ratio)]),
    ),
    '',
    `The worker, ${t.worker.images} new images applied to each task, one a batch, from an ordered queue: ` +
      `${num(t.worker.small.rcu)} capacity units (read and write) and ${num(t.worker.small.requests)} requests ` +
      `per image on the task of ${small}, ${num(t.worker.large.rcu)} and ${num(t.worker.large.requests)} on the ` +
      `task of ${large} (${ratio1(t.worker.ratio)}).` +
      (t.worker.heapPerBatch
        ? ` The heap a batch leaves allocated (a full garbage collection before each, none after), median ` +
          `[min–max]: ${range(kib(t.worker.heapPerBatch.small), ' KiB')} on the task of ${small}, ` +
          `${range(kib(t.worker.heapPerBatch.large), ' KiB')} on the task of ${large} ` +
          `(${ratio1(t.worker.heapPerBatch.large.median / t.worker.heapPerBatch.small.median)}).`
        : ''),
    '',
    recountParagraph(t.recount),
  ].join('\n');
}

/** The heap a recount holds read a page at a time, against the task read whole at once (./task-size.ts). */
function recountParagraph(r: NonNullable<ApiResult['taskSize']>['recount']): string {
  const { small, large } = r.images;
  const cost =
    `It reads ${num(r.paged.rcu)} read units in ${r.paged.requests} requests, the whole task at once ` +
    `${num(r.whole.rcu)} in ${r.whole.requests}.`;
  if (!r.peakHeap)
    return `The recount of the task of ${large} images, read ${r.pageItems} items a page (heap not measured). ${cost}`;
  const h = r.peakHeap;
  const ratio = `**${ratio1(h.wholeOverPaged.median)}** [${num(h.wholeOverPaged.min)}–${num(h.wholeOverPaged.max)}]`;
  return (
    `The recount of the task of ${large} images (\`callbacks recount\`, and the worker's when it gives a message ` +
    `up), read ${r.pageItems} items a page and folded as they come, against the same recount of the task read ` +
    'whole into memory at once, as it was read before (and then added up, which held more still): the heap each ' +
    'holds at its peak, noted every 2,000 items after a full garbage collection, median [min–max] over ' +
    `${r.rounds} round${r.rounds === 1 ? '' : 's'}: ${range(mib(h.pagedLarge), ' MiB')} read by pages, ` +
    `${range(mib(h.whole), ' MiB')} whole (whole / by pages ${ratio}). By pages on a task of ${small} images, ` +
    `which one page holds: ${range(mib(h.pagedSmall), ' MiB')}: what a recount holds depends on its page, not ` +
    `on its task. ${cost}`
  );
}

const ratio1 = (x: number) => `${num(x)}×`;
const kib = (s: Summary): Summary => ({ ...s, median: s.median / 1024, min: s.min / 1024, max: s.max / 1024 });
const mib = (s: Summary): Summary => kib(kib(s));

/** The worker against bare PutItem with a round trip added to every request (./round-trips.ts). */
function roundTripsParagraph(t: NonNullable<WorkerResult['roundTrips']>, concurrency: number): string {
  const r = summarize(t.ratios);
  return (
    `**Over a network.** The same kind of mix as the ingest enqueues signed callbacks (each delivery claimed, so ` +
    `the worker writes none), ${t.rounds} rounds of ${t.callbacksPerRound} callbacks a side, with every request of ` +
    `both sides (DynamoDB, and SNS for the task events) sent ${t.roundTripMs} ms later, as a round trip from a ` +
    `Lambda function takes: the worker applies ${range(summarize(t.workerPerSecond))} callbacks a second, a bare ` +
    `\`PutItem\` loop at the same concurrency (${concurrency}) ${range(summarize(t.barePerSecond))}: ` +
    `${ratio(r)}. The worker sends ${num(t.requestsPerCallback)} requests per callback there.`
  );
}

/** Where the worker's time goes: its DynamoDB requests alone against all of it (./worker.ts replayRequests). */
function requestsAloneParagraph(a: NonNullable<WorkerResult['requestsAlone']>, concurrency: number): string {
  const share = a.msPerCallback / a.workerMsPerCallback;
  return (
    `**Where the worker's time goes.** The ${a.requests.toLocaleString('en-US')} DynamoDB requests the worker ` +
    `with task events sent in that run, sent again alone (in the same order, ${concurrency} at a time, same ` +
    `client, a fresh table): ${num(a.msPerCallback)} ms per callback, ${num(share * 100, 2)}% of the worker's ` +
    `${num(a.workerMsPerCallback)} ms per callback (means over the run); the rest is its own code, its task ` +
    `events through SNS (fauxqs, in the same process) and garbage collection. Bare \`PutItem\`: ` +
    `${num(a.bareMsPerCallback)} ms per callback. With no time of its own at all, the worker would reach ` +
    `${x(a.bareMsPerCallback / a.msPerCallback)} bare \`PutItem\` here: the requests it makes per callback, ` +
    `each dearer than a bare put (a condition, a larger item), set that bound.` +
    (a.claimsMsPerCallback === undefined
      ? ''
      : ` Its delivery puts alone, sent again the same way (the one conditional write per callback the replay rule ` +
        `makes: no batch request can carry its condition): ${num(a.claimsMsPerCallback)} ms per callback, ` +
        `${x(a.bareMsPerCallback / a.claimsMsPerCallback)} bare \`PutItem\` for a worker that did nothing else.`)
  );
}

/** The totals at 1 to 3 callbacks a batch. */
function lowTrafficTable(rows: NonNullable<CostResult['lowTrafficBatches']>): string {
  return [
    'From one to three callbacks a batch (the mix of part 3 through `processBatch` in FIFO batches of at most 1, ' +
      "2 and 3, metered as at full batches; the worker's time per record as at full batches):",
    '',
    table(
      ['callbacks a batch', 'write units', 'read units', 'total'],
      rows.map((row) => [
        String(row.batchSize),
        num(row.inputs.writeUnitsPerCallback),
        num(row.inputs.readUnitsPerCallback),
        `**${usd(row.totalUsd)}**`,
      ]),
    ),
  ].join('\n');
}

function workerSection(
  r: WorkerResult,
  _cost: { withEvents: number; withoutEvents: number | null; lowTraffic: number | null } | null,
): string {
  const c = r.capacity;
  const requests = Object.entries(r.requestsPerCallback)
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${num(n)} ${name}`)
    .join(', ');
  return [
    '## 3. Worker cost',
    '',
    `A realistic mix from the sender emulator's generator (both services, duplicates, callbacks shuffled within ` +
      `${'reorderPlatformMs' in c.faults ? c.faults.reorderPlatformMs : 0} ms of platform time as the platform ` +
      `reorders them, a few storage outages and failed starts) ` +
      `as SQS records of a valid signature, in batches of ${r.batchSize} (the event source mapping's batch size) ` +
      `through \`processBatch\` ` +
      `with the DynamoDB task store, ${r.concurrency} records at a time (the worker's default), against dynalite in ` +
      `the same process, with the worker's own DynamoDB and SNS clients (\`lib/worker/config.ts\`). ` +
      `Baseline: one bare \`PutItem\` of each raw body, same client, table, batches and concurrency. ${r.rounds} ` +
      `rounds of ${r.callbacksPerRound} callbacks per side, alternating.`,
    '',
    table(
      ['figure', 'median [min–max]', 'baseline', 'baseline median [min–max]', 'ratio'],
      [
        [
          'callbacks applied per second',
          range(r.workerPerSecond),
          'bare `PutItem` per second',
          range(r.barePutPerSecond),
          ratio(r.ratio),
        ],
        ...(r.withoutEvents
          ? [
              [
                'the same, without task events',
                range(r.withoutEvents.workerPerSecond),
                'bare `PutItem` per second',
                range(r.barePutPerSecond),
                ratio(r.withoutEvents.ratio),
              ],
            ]
          : []),
        [
          `time per batch of ${r.batchSize}`,
          range(r.workerBatchMs, ' ms'),
          `bare \`PutItem\` × ${r.batchSize}`,
          range(r.barePutBatchMs, ' ms'),
          x(r.workerBatchMs.median / r.barePutBatchMs.median),
        ],
      ],
    ),
    '',
    `DynamoDB requests per callback in that run: ${requests} (the baseline: exactly 1 PutItem). Outcomes: ` +
      Object.entries(r.outcomes)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ') +
      `. Units the worker logged there (conflicting writes within a batch and their retries included): ` +
      `${num(r.loggedWcuPerCallback)} write and ${num(r.loggedRcuPerCallback)} read units per callback; ` +
      `${num(r.publishedPerCallback ?? 0)} task events published to SNS per callback.`,
    '',
    ...(r.requestsAlone ? [requestsAloneParagraph(r.requestsAlone, r.concurrency), ''] : []),
    ...(r.roundTrips ? [roundTripsParagraph(r.roundTrips, r.concurrency), ''] : []),
    `**Capacity units per callback.** Another ${c.callbacks} callbacks of the same kind of mix applied one at a ` +
      `time through ` +
      '`store.applyCallback`, summing the units DynamoDB reports (dynalite computes them as DynamoDB does: a write ' +
      'unit per KB ' +
      'of the larger of the item before and after, a strongly consistent read unit per 4 KB, an eventually ' +
      'consistent one per 8 KB). ' +
      'The store remembers no task header and no file item from one callback to the next, as a worker meeting ' +
      'each task for the first time (the throughput run above remembers them, as the worker does). ' +
      'Baseline: one bare `PutItem` of the same body. ' +
      "dynalite reports the table's units only; the writes to the four keys-only indexes, which DynamoDB bills too, " +
      'are worked out ' +
      'from the task header before and after each callback (an entry added or removed: 1 unit, changed: 2, ' +
      'unchanged: 0), and those to the `byTaskTime` index, which projects the whole delivery, from the delivery ' +
      'before and after (an entry put: 1 unit per KB of the delivery, removed: 1, unchanged: 0). ' +
      'Any put whose condition fails (a version conflict, a delivery of an unsigned callback already stored, a ' +
      'guess that an item ' +
      'was absent) is counted as 1 write unit by the store itself: DynamoDB bills it but reports nothing on the ' +
      'error. ' +
      `Outcomes: ${Object.entries(c.outcomes)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ')}.`,
    '',
    kindTable(c, table, num, x),
    '',
    '**Task events.** The last column counts the task events the worker publishes for each delivery ' +
      '(`eventsOfWrite` on what `applyCallback` returned; a duplicate publishes again what its item holds, same ' +
      'ids). ' +
      'Each delivery is applied as the worker applies a batch of one (the low-traffic case): its writes, then one ' +
      "update of its task's header that counts them; its events are read off that update, and the task-event read " +
      "units are those of an upload event's file (its attempts). A full batch of one task's callbacks shares one " +
      'header update. ' +
      "Part 3's throughput run publishes them through SNS (fauxqs, fanned out to one SQS queue), so the time per " +
      'batch ' +
      'includes the reads and the PublishBatch calls.',
    '',
    ...batchSection(r, table, num),
    '',
    ...storeSections(r, table, num),
    '',
  ].join('\n');
}

function endToEndSection(r: EndToEndResult): string {
  const s = r.send;
  const ms = (n: number | null) => (n === null ? 'did not drain' : `${num(n / 1000)} s`);
  return [
    '## 5. End to end',
    '',
    `${r.callbacks.toLocaleString('en-US')} callbacks (${r.tasks} tasks of both services, ${r.duplicates} of them ` +
      `repeats, reordering within ` +
      `${r.faults.reorderWindowMs} ms, storage outages on ${r.faults.outage * 100}% of the tasks) from the sender ` +
      `emulator (\`callbacks emulate\`'s modules, ` +
      `${r.concurrency} requests in flight, signed in headers) through the local stack (\`callbacks dev\`'s ` +
      `\`startLocalStack\`, in memory) in the same process, ` +
      "then the verifier (`callbacks verify`'s `verifyTasks`). Baseline: `GET /health` on the same server, idle " +
      'before the run ' +
      `(${r.healthIdleMs.n} requests, same concurrency) and sampled one at a time during it ` +
      `(${r.healthUnderLoadMs.n} requests).`,
    '',
    table(
      ['figure', 'value', 'baseline', 'baseline value', 'ratio'],
      [
        [
          'ack latency p50',
          `${num(r.ackLatencyMs.p50)} ms`,
          '`GET /health` p50, idle / under load',
          `${num(r.healthIdleMs.p50)} ms / ${num(r.healthUnderLoadMs.p50)} ms`,
          `${x(r.ratios.ackOverIdleHealth.p50)} / ${x(r.ratios.ackOverLoadedHealth.p50)}`,
        ],
        [
          'ack latency p99',
          `${num(r.ackLatencyMs.p99)} ms`,
          '`GET /health` p99, idle / under load',
          `${num(r.healthIdleMs.p99)} ms / ${num(r.healthUnderLoadMs.p99)} ms`,
          `${x(r.ratios.ackOverIdleHealth.p99)} / ${x(r.ratios.ackOverLoadedHealth.p99)}`,
        ],
        ['sending (all acks)', ms(s.durationMs), '—', '—', '—'],
        [
          'queue drained after the last ack',
          ms(r.drainAfterLastAckMs),
          'sending time',
          ms(s.durationMs),
          r.drainAfterLastAckMs === null ? '—' : x(r.drainAfterLastAckMs / s.durationMs),
        ],
        [
          'callbacks applied per second, whole run',
          r.throughputPerSecond === null ? '—' : num(r.throughputPerSecond),
          '—',
          '—',
          '—',
        ],
        [
          '`verify`',
          r.verify.ok
            ? `**passed**: ${r.verify.matched}/${r.verify.checked} tasks match`
            : `**FAILED**: ${r.verify.matched}/${r.verify.checked} tasks match`,
          '—',
          '—',
          '—',
        ],
      ],
    ),
    '',
    `Requests: ${s.requests} (${s.status2xx} 2xx, ${s.status4xx} 4xx, ${s.status5xx} 5xx, ${s.networkErrors} ` +
      `without answer, ${s.retried} retries); ` +
      `${s.delivered} acknowledged, ${s.undelivered} not. Worker: ${r.poller.batches} batches, ` +
      `${num(r.poller.meanBatch)} records on average ` +
      `(largest ${r.poller.largestBatch}), ${r.poller.failedRecords} records failed and retried; ${r.deadLetters} ` +
      `messages in the dead-letter queue.` +
      (r.verify.firstDiffs.length
        ? `\n\nFirst differences:\n\n${r.verify.firstDiffs.map((l) => `    ${l}`).join('\n')}`
        : ''),
  ].join('\n');
}

function costSection(r: CostResult): string {
  const rows = r.breakdown.lines.map((l, i) => {
    const b = r.baseline.lines[i]!;
    return [l.item, l.quantity, usd(l.usd), `${num((l.usd / r.breakdown.totalUsd) * 100, 2)}%`, usd(b.usd)];
  });
  rows.push(['**total**', '', `**${usd(r.breakdown.totalUsd)}**`, '100%', `**${usd(r.baseline.totalUsd)}**`]);
  const p = r.prices;
  return [
    '## 6. Cost per million callbacks on AWS',
    '',
    `Prices: ${p.statedAs}: HTTP API $${p.httpApiPerMillionRequests} per million requests; Lambda ` +
      `$${p.lambdaPerMillionRequests} per million ` +
      `requests and $${p.lambdaPerGbSecond} per GB-s (arm64); SQS FIFO $${p.sqsPerMillionRequests} per million ` +
      'requests; ' +
      `DynamoDB on-demand ` +
      `$${p.dynamoPerMillionWriteUnits} per million write and $${p.dynamoPerMillionReadUnits} per million read ` +
      `request units; ` +
      `SNS $${p.snsPerMillionPublishes ?? 0.5} per million published messages (deliveries to SQS subscribers are ` +
      `free). ` +
      `Settings from serverless.yml: ${r.settings.architecture}, ingest ${r.settings.ingestMemoryMb} MB, worker ` +
      `${r.settings.workerMemoryMb} MB, ` +
      `batches of ${r.settings.batchSize}. Measured inputs (${r.inputsFrom}): ingest ` +
      `${num(r.inputs.ingestMsPerCallback)} ms per callback (part 1), ` +
      `worker ${num(r.inputs.workerMsPerBatch)} ms per batch (part 3), ${num(r.inputs.writeUnitsPerCallback)} write ` +
      `and ` +
      `${num(r.inputs.readUnitsPerCallback)} read units per callback (part 3 at full FIFO batches, index writes ` +
      `and the reads of task events included), ${num(r.inputs.publishesPerCallback ?? 0)} task events published ` +
      'per callback (part 3).',
    '',
    `Baseline: the same pipeline with the bare handlers of parts 1 and 3 (ingest ` +
      `${num(r.baselineInputs.ingestMsPerCallback)} ms, ` +
      `worker ${num(r.baselineInputs.workerMsPerBatch)} ms per batch, ` +
      `${num(r.baselineInputs.writeUnitsPerCallback)} write unit and no read per callback). ` +
      `This design costs ${x(r.ratio)} the baseline.`,
    '',
    table(['item', 'per million callbacks', 'USD', 'share', 'baseline USD'], rows),
    '',
    ...(r.withoutEventsUsd === undefined
      ? []
      : [
          `Without task events (a stack without their topic: no SNS publishes, no task reads for them) the total is ` +
            `${usd(r.withoutEventsUsd)}.`,
          '',
        ]),
    ...(r.lowTraffic
      ? [
          `At low traffic, a batch of one callback (part 3's one-at-a-time measure: ` +
            `${num(r.lowTraffic.inputs.writeUnitsPerCallback)} write and ` +
            `${num(r.lowTraffic.inputs.readUnitsPerCallback)} read units, ` +
            `${num(r.lowTraffic.inputs.publishesPerCallback ?? 0)} task events per callback; a worker invocation, a ` +
            'receive and a delete per callback), the total is ' +
            `${usd(r.lowTraffic.totalUsd)}: the price of counts kept in the header, which a batch of one pays ` +
            'alone.',
          '',
        ]
      : []),
    ...(r.lowTrafficBatches && r.lowTrafficBatches.length > 0 ? [lowTrafficTable(r.lowTrafficBatches), ''] : []),
    `With the units seen in part 3's throughput run, where the worker applies ` +
      `${r.underContention.recordConcurrency} records of a batch at once and conflicting ` +
      `writes to one task are retried (${num(r.underContention.writeUnits)} write and ` +
      `${num(r.underContention.readUnits)} read units per callback), ` +
      `the total is ${usd(r.underContention.totalUsd)}.`,
    '',
    'Estimates, not a bill. Requests and capacity units do not depend on this machine; the Lambda durations do. ' +
      'They are the ' +
      'handler times measured here against emulators running in the same process: on AWS each SQS or DynamoDB call ' +
      'is a network ' +
      'round trip of a few milliseconds instead, while the handlers no longer share a CPU with the emulators, so ' +
      'the duration lines may ' +
      'come out higher or lower (they are a small share of the total either way). SQS requests assume full batches ' +
      '(one ReceiveMessage ' +
      "and one DeleteMessageBatch per 10 messages); the event source mapping's empty polls while idle are not per " +
      'callback and are ' +
      'left out. Also left out: free tiers, CloudWatch Logs and the raw archive (stated in part 3), data transfer, ' +
      'other ' +
      'table storage, backups and alarms.',
  ].join('\n');
}

export function renderMarkdown(r: BenchResults): string {
  const m = r.machine;
  const parts: string[] = [
    '# Benchmark results',
    '',
    `Run on ${r.date} (${r.mode} run, ${num(r.durationS)} s) on ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB ` +
      `memory, ` +
      `Node ${m.node}, ${m.os}. 1-minute load average at start ${m.loadAverage.start}` +
      (m.loadAverage.end === null ? '' : `, at end ${m.loadAverage.end}`) +
      '. Generated by `npm run bench`; the same figures are in `results.json`.',
    '',
    'Machines are noisy, so every figure stands beside a baseline measured in the same run, and the ratio (figure / ' +
      'baseline) is ' +
      'the number to compare between machines. Medians over repeated rounds, with [min–max].',
  ];
  const busiest = Math.max(m.loadAverage.start, m.loadAverage.end ?? 0);
  if (busiest > m.cores * 0.75) {
    parts.push(
      '',
      `**A busy machine.** The load average reached ${busiest} on ${m.cores} cores: other work shared the CPU ` +
        `during this run, ` +
        'so absolute figures are likely slower than on a quiet machine, and min–max ranges are wide. The ratios ' +
        'hold better, since each ' +
        'pair of rounds shared the same conditions, but read them with that in mind.',
    );
  }
  for (const [name, reason] of Object.entries(r.missing)) parts.push('', `**${name}: not measured.** ${reason}`);
  if (r.ingest) parts.push('', ingestSection(r.ingest));
  if (r.coldStart) parts.push('', coldStartSection(r.coldStart));
  const cost = r.cost
    ? {
        withEvents: r.cost.breakdown.totalUsd,
        withoutEvents: r.cost.withoutEventsUsd ?? null,
        lowTraffic: r.cost.lowTraffic?.totalUsd ?? null,
      }
    : null;
  if (r.worker) parts.push('', workerSection(r.worker, cost));
  if (r.api) parts.push('', apiSection(r.api));
  if (r.endToEnd) parts.push('', endToEndSection(r.endToEnd));
  if (r.cost) parts.push('', costSection(r.cost));
  if (r.archive) parts.push('', archiveSection(r.archive, table, num));
  return `${parts.join('\n')}\n`;
}

/** The headline figures, one row each, printed at the end of a run. */
export function renderSummary(r: BenchResults): string {
  const rows: string[][] = [];
  if (r.ingest) {
    rows.push([
      'ingest handler time per callback (fauxqs, dynalite)',
      `${num(r.ingest.handlerMs.median)} ms`,
      `bare SendMessage ${num(r.ingest.bareSendMs.median)} ms`,
      x(r.ingest.ratio.median),
    ]);
    rows.push([
      'of which the replay claim (dynalite)',
      `${num(r.ingest.claimMs.median)} ms`,
      `bare PutItem ${num(r.ingest.barePutMs.median)} ms`,
      x(r.ingest.claimRatio.median),
    ]);
    rows.push([
      'ingest handler CPU per callback, queue and table excluded',
      `${num(r.ingest.cpu.handlerUs.median)} µs`,
      `JSON.parse ${num(r.ingest.cpu.jsonParseUs.median)} µs`,
      x(r.ingest.cpu.ratio.median),
    ]);
  }
  if (r.coldStart) {
    for (const b of r.coldStart.bundles.filter((b) => b.role === 'function' && b.ratios)) {
      const base = r.coldStart.bundles.find((x) => x.name === b.baseline)!;
      rows.push([
        `${b.name} bundle size (zip)`,
        `${bytes(b.zipBytes)} B`,
        `${base.name} ${bytes(base.zipBytes)} B`,
        x(b.ratios!.zipBytes),
      ]);
      rows.push([
        `${b.name} import in a fresh Node`,
        `${num(b.importMs.median)} ms`,
        `${base.name} ${num(base.importMs.median)} ms`,
        x(b.ratios!.importMs.median),
      ]);
    }
  }
  if (r.worker) {
    rows.push([
      'worker callbacks per second (dynalite)',
      num(r.worker.workerPerSecond.median),
      `bare PutItem ${num(r.worker.barePutPerSecond.median)}/s`,
      x(r.worker.ratio.median),
    ]);
    if (r.worker.withoutEvents)
      rows.push([
        'the same, without task events',
        num(r.worker.withoutEvents.workerPerSecond.median),
        `bare PutItem ${num(r.worker.barePutPerSecond.median)}/s`,
        x(r.worker.withoutEvents.ratio.median),
      ]);
    const mix = r.worker.capacity.mix;
    const full = r.worker.batchCapacity;
    if (full)
      rows.push([
        'write units per callback, realistic mix, full FIFO batches',
        num(full.tableWcu + full.indexWcu),
        `bare PutItem ${num(mix.bareWcu)}`,
        x((full.tableWcu + full.indexWcu) / mix.bareWcu),
      ]);
    rows.push([
      'write units per callback, realistic mix, a batch of one',
      num(mix.tableWcu + mix.indexWcu),
      `bare PutItem ${num(mix.bareWcu)}`,
      x(mix.ratio),
    ]);
  }
  if (r.api) {
    const one = r.api.requests[0]!;
    rows.push([
      `read API ${one.request.split(' ')[0]} /tasks/{id}, per request (dynalite)`,
      `${num(one.ms.median)} ms`,
      `bare GetItem ${num(r.api.bareGetItemMs.median)} ms`,
      x(one.ratio.median),
    ]);
  }
  if (r.endToEnd) {
    const e = r.endToEnd;
    rows.push([
      `end to end ack latency p50 / p99 (${e.callbacks.toLocaleString('en-US')} callbacks)`,
      `${num(e.ackLatencyMs.p50)} / ${num(e.ackLatencyMs.p99)} ms`,
      `GET /health under load ${num(e.healthUnderLoadMs.p50)} / ${num(e.healthUnderLoadMs.p99)} ms`,
      `${x(e.ratios.ackOverLoadedHealth.p50)} / ${x(e.ratios.ackOverLoadedHealth.p99)}`,
    ]);
    rows.push([
      'queue drained after the last ack',
      e.drainAfterLastAckMs === null ? 'did not drain' : `${num(e.drainAfterLastAckMs / 1000)} s`,
      `sending ${num(e.send.durationMs / 1000)} s`,
      e.drainAfterLastAckMs === null ? '—' : x(e.drainAfterLastAckMs / e.send.durationMs),
    ]);
    rows.push([
      '`verify` after the run',
      e.verify.ok
        ? `passed (${e.verify.matched}/${e.verify.checked} tasks)`
        : `FAILED (${e.verify.matched}/${e.verify.checked})`,
      '—',
      '—',
    ]);
  }
  if (r.cost) {
    rows.push([
      'AWS cost per million callbacks',
      usd(r.cost.breakdown.totalUsd),
      `bare pipeline ${usd(r.cost.baseline.totalUsd)}`,
      x(r.cost.ratio),
    ]);
  }
  if (r.archive) rows.push(...archiveSummaryRows(r.archive, num));
  return table(['figure', 'measured', 'baseline (same run)', 'ratio'], rows);
}

export function writeReport(r: BenchResults, dir: string): { markdown: string; json: string } {
  mkdirSync(dir, { recursive: true });
  const markdown = join(dir, 'RESULTS.md');
  const json = join(dir, 'results.json');
  writeFileSync(markdown, renderMarkdown(r), 'utf8');
  writeFileSync(json, `${JSON.stringify(r, null, 2)}\n`, 'utf8');
  return { markdown, json };
}
