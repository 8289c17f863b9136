// Part `archive` in bench/RESULTS.md: the worker with and without the archive (./archive.ts), and the archive's
// cost per million callbacks beside the raw items DynamoDB keeps (./archive-cost.ts).
import type { ArchiveBenchResult, ArchivedSide } from './archive.ts';
import { ARCHIVE_PRICES, archiveCostPerMillion, type ArchiveCost } from './archive-cost.ts';
import type { Summary } from './stats.ts';

type Table = (head: string[], rows: string[][]) => string;
type Fmt = (value: number, digits?: number) => string;

/** The volumes and the stage the cost is worked out for. */
const VOLUMES = [1e6, 1e9];
/** Two services and ten appKeys, each with callbacks in every 5-minute buffer of the month. */
const ACTIVE_PARTITIONS = 20;
const RETENTION_DAYS = 365;

const usd = (n: number) => (n >= 0.01 ? `$${n.toFixed(3)}` : `$${n.toFixed(5)}`);

export function archiveCosts(r: ArchiveBenchResult): ArchiveCost[] {
  return VOLUMES.map((callbacksPerMonth) =>
    archiveCostPerMillion({
      callbacksPerMonth,
      activePartitions: ACTIVE_PARTITIONS,
      retentionDays: RETENTION_DAYS,
      recordsPerCallback: r.firehose.recordsPerCallback,
      recordBytes: r.firehose.recordBytes,
      billedBytes: r.firehose.billedBytes,
      gzipRatio: r.firehose.gzipRatio,
      recordingShare: r.firehose.recordingShare,
      deliveryItemBytes: r.deliveryItemBytes,
    }),
  );
}

function timeTable(r: ArchiveBenchResult, table: Table, num: Fmt): string {
  const range = (s: Summary) => `${num(s.median)} [${num(s.min)}–${num(s.max)}]`;
  const requests = (side: ArchiveBenchResult['plain']) =>
    Object.entries(side.dynamoRequests)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([op, n]) => `${op} ${num(n)}`)
      .join(', ');
  const ratio = (s: ArchivedSide) =>
    `**${num(s.ratio.median)}×** [${num(s.ratio.min)}–${num(s.ratio.max)}]; ${num(s.geometricMean)}×; ` +
    `${num(s.totalRatio)}×`;
  const row = (name: string, s: ArchiveBenchResult['plain'], over: string) => [
    name,
    range(s.msPerCallback),
    over,
    num(s.wcu),
    num(s.rcu),
    requests(s),
  ];
  return table(
    [
      'worker',
      'ms per callback, median of rounds',
      'over without: median of rounds; geometric mean; total time',
      'write units',
      'read units',
      'DynamoDB requests per callback',
    ],
    [
      row('without the archive', r.plain, '—'),
      row('with it, Firehose answering at once', r.answered, ratio(r.answered)),
      row('with it, through the stand-in (S3 writes before its answer)', r.archived, ratio(r.archived)),
    ],
  );
}

function costTable(costs: ArchiveCost[], table: Table): string {
  const [low, high] = costs as [ArchiveCost, ArchiveCost];
  return table(
    ['item', 'per million callbacks, a million a month', 'USD', 'at a billion a month', 'USD'],
    [
      ...low.lines.map((line, i) => [
        line.item,
        line.quantity,
        usd(line.usd),
        high.lines[i]!.quantity,
        usd(high.lines[i]!.usd),
      ]),
      ['**the archive**', '', `**${usd(low.totalUsd)}**`, '', `**${usd(high.totalUsd)}**`],
    ],
  );
}

export function archiveSection(r: ArchiveBenchResult, table: Table, num: Fmt): string {
  const costs = archiveCosts(r);
  const [low, high] = costs as [ArchiveCost, ArchiveCost];
  const f = r.firehose;
  return [
    '## 8. The archive',
    '',
    'The deployed worker (lib/worker/config.ts, from its environment) without `ARCHIVE_STREAM` and with it, in one ' +
      `process: ${r.rounds} rounds of ${r.callbacksPerRound} callbacks of part 3's mix, in the FIFO queue's batches ` +
      `of ${r.batchSize}, each side on a table of its own (one dynalite), task events to fauxqs' SNS; the sides ` +
      'take turns at going first, one ratio per round.',
    '',
    timeTable(r, table, num),
    '',
    'The archive adds no DynamoDB unit or request to the worker. Its time is that of building the lines and of ' +
      `${num(f.callsPerBatch)} PutRecordBatch call per batch: against a Firehose that answers at once (as Firehose ` +
      "does: it buffers, then delivers), the worker's own cost; through the stand-in, which writes the call's " +
      "objects to fauxqs' S3 in the same process before it answers, an upper bound. Deployed, the call is one " +
      'network round trip to Firehose per batch of up to 10 callbacks, as each of its DynamoDB writes is. It sends ' +
      `${num(f.recordsPerCallback)} record per callback of ${num(f.recordBytes)} bytes on average (billed as ` +
      `${num(f.billedBytes)}: Firehose rounds each record up to 5 KB), and every stored callback was read back from ` +
      `the bucket once (${f.linesArchived.toLocaleString('en-US')} lines).`,
    '',
    `**Cost per million callbacks** (${ARCHIVE_PRICES.statedAs}; GB of 2^30 bytes): the lines gzip to ` +
      `${num(f.gzipRatio * 100)}% of their size (all of them as one stream, as Firehose's objects of up to 128 MB ` +
      "compress; the mix's bodies are much alike, real ones compress less), " +
      `${num(f.recordingShare * 100)}% of them recording callbacks; a stage of ` +
      `${ACTIVE_PARTITIONS} partitions written all month (two services, ten appKeys: one object per partition per ` +
      `5-minute buffer at most), objects kept ${RETENTION_DAYS} days. The per-object and JQ charges are fixed per ` +
      'month, not per callback: they weigh on a million a month and vanish at a billion.',
    '',
    costTable(costs, table),
    '',
    `The JQ line is a bound: AWS bills the hours JQ spends parsing, at most every hour of the month ` +
      `($${ARCHIVE_PRICES.jqPerHour} × 720 = $${(ARCHIVE_PRICES.jqPerHour * 720).toFixed(2)} a month). The Athena ` +
      'line ' +
      "counts a task's history over one month of objects; run over a year of them, as written, it scans every day " +
      "kept (12 times more): the `archived` answer's query names the task's days (docs/api.md).",
    '',
    `**Beside the table's raw items.** A delivery item is ${num(r.deliveryItemBytes)} bytes as DynamoDB sizes it ` +
      '(100 more of overhead), stored twice (the item and its copy in the `byTaskTime` index, which projects it ' +
      `whole), at $0.25 per GB-month: kept 90 days, ${usd(low.dynamo.beforeUsd)} per million callbacks; kept ` +
      `${low.dynamo.nowDays} days now, ${usd(low.dynamo.nowUsd)}. The archive, kept a year and asked five ` +
      `questions a month, costs ${usd(high.totalUsd)} per million at a billion callbacks a month ` +
      `(${usd(low.totalUsd)} at a million a month, where its fixed monthly charges fall on few callbacks), and the ` +
      'table saves ' +
      `${usd(low.dynamo.beforeUsd - low.dynamo.nowUsd)} per million.`,
  ].join('\n');
}

/** The headline row of the run's summary. */
export function archiveSummaryRows(r: ArchiveBenchResult, num: Fmt): string[][] {
  const high = archiveCosts(r)[1]!;
  return [
    [
      'worker ms per callback with the archive (Firehose answering at once)',
      num(r.answered.msPerCallback.median),
      `without ${num(r.plain.msPerCallback.median)}`,
      `**${num(r.answered.ratio.median)}×**`,
    ],
    [
      'the same through the stand-in (S3 writes before its answer)',
      num(r.archived.msPerCallback.median),
      `without ${num(r.plain.msPerCallback.median)}`,
      `**${num(r.archived.ratio.median)}×**`,
    ],
    [
      'archive cost per million callbacks, a billion a month',
      usd(high.totalUsd),
      `raw items 90 days in DynamoDB ${usd(high.dynamo.beforeUsd)}`,
      `**${num(high.totalUsd / high.dynamo.beforeUsd)}×**`,
    ],
  ];
}
