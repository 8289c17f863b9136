// The parts of the worker's report that describe the task store: the stress case, the size of the items
// it leaves, and what it costs beyond the request units (logs, the raw archive).
import { STORAGE_PRICES } from './cost.ts';
import type { CapacityResult, WorkerResult } from './worker.ts';

type Cells = string[];
type Table = (header: string[], rows: Cells[]) => string;
type Fmt = (n: number, digits?: number) => string;

/** The per-kind table of a capacity run. */
export function kindTable(c: CapacityResult, table: Table, num: Fmt, x: (n: number) => string): string {
  const row = (label: string, k: Omit<CapacityResult['kinds'][number], 'kind'>, bold = false) => {
    const b = (s: string) => (bold ? `**${s}**` : s);
    return [
      bold ? `**${label}**` : label,
      String(k.count),
      b(num(k.tableWcu)),
      b(num(k.indexWcu)),
      b(num(k.tableWcu + k.indexWcu)),
      b(num(k.rcu)),
      b(num(k.eventRcu ?? 0)),
      b(num(k.bareWcu)),
      x(k.ratio),
      b(num(k.publishes ?? 0)),
    ];
  };
  return table(
    [
      'kind',
      'callbacks',
      'table write units',
      'index write units',
      'write units',
      'read units',
      'task-event read units',
      'bare PutItem write units',
      'write ratio',
      'task events published',
    ],
    [...c.kinds.map((k) => row(k.kind, k)), row('mix', c.mix, true)],
  );
}

export function storeSections(r: WorkerResult, table: Table, num: Fmt): string[] {
  const c = r.capacity;
  const s = r.stressCapacity;
  const itemRows = (cap: CapacityResult) =>
    cap.items.map((i) => [
      i.kind,
      i.count.toLocaleString('en-US'),
      `${i.largestBytes} B`,
      `${i.meanBytes} B`,
      String(i.over1KB),
    ]);
  const delivery = c.items.find((i) => i.kind.startsWith('delivery'));
  // Each delivery's item is kept RAW_EVENT_TTL_DAYS: a steady flow of a million callbacks a month keeps
  // that many months' worth stored (DynamoDB adds 100 bytes of overhead per item).
  const months = STORAGE_PRICES.rawEventTtlDays / 30;
  const archiveGb = delivery ? ((delivery.meanBytes + 100) * delivery.count * 1e6) / c.callbacks / 1e9 : 0;
  const logGb = (r.logBytesPerCallback * 1e6) / 1e9;
  const parts = [
    `**The stress case.** The same measure on a mix shuffled within ` +
      `${'reorderWindowMs' in s.faults ? s.faults.reorderWindowMs : 0} ms of a schedule ` +
      'compressed 3,600 times (12 minutes of platform time): starts arrive after the uploads of their task, which ' +
      'then ' +
      'create the task and improve its identity later, moving its index keys.',
    '',
    table(
      ['mix', 'callbacks', 'write units', 'of which index', 'read units', 'task-event read units'],
      (
        [
          ['realistic (above)', c],
          ['stress', s],
        ] as const
      ).map(([name, m]) => [
        name,
        String(m.callbacks),
        num(m.mix.tableWcu + m.mix.indexWcu),
        num(m.mix.indexWcu),
        num(m.mix.rcu),
        num(m.mix.eventRcu ?? 0),
      ]),
    ),
    '',
    `**Items left in the table** after the realistic mix (sizes as DynamoDB counts them, attribute names included; ` +
      `a write ` +
      'unit covers 1 KB):',
    '',
    table(['item', 'items', 'largest', 'mean', 'over 1 KB'], itemRows(c)),
    '',
    `**Beyond request units.** The worker wrote ${num(r.logBytesPerCallback)} bytes of log lines per callback in the ` +
      `throughput run (CloudWatch Logs ingests them: ${num(logGb, 3)} GB per million callbacks, ` +
      `$${num(logGb * STORAGE_PRICES.logsPerGbIngested, 3)} ` +
      `at $${STORAGE_PRICES.logsPerGbIngested} per GB). The raw archive is one delivery item per callback, ` +
      `${delivery ? delivery.meanBytes : 0} bytes on average: ${num(archiveGb, 3)} GB per million callbacks, kept ` +
      `${STORAGE_PRICES.rawEventTtlDays} days, so a steady million a month keeps about ` +
      `${num(archiveGb * months, 2)} GB stored, ` +
      `$${num(archiveGb * months * STORAGE_PRICES.dynamoPerGbMonth, 2)} a month at ` +
      `$${STORAGE_PRICES.dynamoPerGbMonth} per GB-month. ` +
      'Neither is in the total of part 6.',
  ];
  return parts;
}

/** Part 3 at full FIFO batches, beside the batch-of-one measure (the low-traffic case). */
export function batchSection(r: WorkerResult, table: Table, num: Fmt): string[] {
  const b = r.batchCapacity;
  if (!b) return [];
  const one = r.capacity.mix;
  const outcomes = Object.entries(b.outcomes)
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');
  const row = (label: string, tableWcu: number, indexWcu: number, rcu: number, publishes: number) => [
    label,
    num(tableWcu),
    num(indexWcu),
    `**${num(tableWcu + indexWcu)}**`,
    `**${num(rcu)}**`,
    num(publishes),
  ];
  return [
    `**At full FIFO batches.** The same ${b.callbacks} callbacks (the same generator and seed) as the FIFO queue ` +
      'holds them, a message group per task and a sequence number each, with a backlog: each receive hands out as ' +
      "many messages of the group holding the oldest message as fit, in order, then those of the next groups' " +
      `oldest, up to ${r.batchSize} a batch (${b.batches} batches, ${num(b.meanBatch)} records and ` +
      `${num(b.meanTasksPerBatch)} tasks each on average). Each batch goes through \`processBatch\` with the ` +
      `DynamoDB task store, ${r.concurrency} records at a time, task events on (counted, not sent): its writes, ` +
      "one count of each task's header, the events read off it. Every request is metered at the client: the units " +
      'DynamoDB reports, 1 write unit for a write whose condition failed, and the index writes worked out as above ' +
      'from the item before and after each write. The worker is warm: it remembers the headers and files it ' +
      `wrote, as a deployed one does between batches. Outcomes: ${outcomes}.`,
    '',
    table(
      ['delivery', 'table write units', 'index write units', 'write units', 'read units', 'task events published'],
      [
        row(`full FIFO batches (up to ${r.batchSize})`, b.tableWcu, b.indexWcu, b.rcu, b.publishes),
        row(
          'a batch of one (the low-traffic case, above)',
          one.tableWcu,
          one.indexWcu,
          one.rcu + (one.eventRcu ?? 0),
          one.publishes,
        ),
      ],
    ),
    '',
    'Where the units of the full batches go, per callback, by item and request:',
    '',
    table(
      ['item and request', 'requests', 'table write units', 'index write units', 'read units'],
      b.breakdown.map((x) => [x.what, num(x.requests), num(x.wcu), num(x.indexWcu), num(x.rcu)]),
    ),
  ];
}
