// The bench's cheap parts, in-process and tiny: its statistics and cost arithmetic on known inputs, the
// settings it reads from serverless.yml, the index-write rule, the mix it generates, and one short run of
// the ingest part against fauxqs and of the read API part against dynalite. Shapes and values are checked,
// never timings.
import { readRecord } from '../lib/queue-message.ts';
import { parseCallback } from '../lib/domain/callback.ts';
import { localStageSettings } from '../devkit/local/stack-template.ts';
import { generateMix, kindOf } from '../bench/callbacks.ts';
import { toSqsRecord } from '../devkit/seeds/sqs-record.ts';
import { PRICES, billedMs, costPerMillion, loadDeployedSettings, readDeployedSettings } from '../bench/cost.ts';
import { benchApi } from '../bench/api.ts';
import { benchTaskSize } from '../bench/task-size.ts';
import { benchIngest } from '../bench/ingest.ts';
import { describeMachine, renderMarkdown, renderSummary, type BenchResults } from '../bench/report.ts';
import { median, percentile, ratios, summarize } from '../bench/stats.ts';
import { eventsIndexWrites, indexWrites } from '../bench/worker.ts';
import { ARCHIVE_PRICES, archiveCostPerMillion } from '../bench/archive-cost.ts';
import { benchArchive } from '../bench/archive.ts';

describe('statistics', () => {
  test('median, nearest-rank percentiles and summaries', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(hundred, 50)).toBe(50);
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile(hundred, 100)).toBe(100);
    expect(percentile([7], 1)).toBe(7);
    expect(summarize([3, 9, 1, 4])).toEqual({ median: 3.5, min: 1, max: 9, n: 4 });
  });

  test('ratios are taken round by round and refuse mismatched or empty series', () => {
    expect(ratios([2, 9], [1, 3])).toEqual([2, 3]);
    expect(() => ratios([1], [1, 2])).toThrow(/different lengths/);
    expect(() => ratios([1], [0])).toThrow(/zero baseline/);
    expect(() => summarize([])).toThrow(/empty/);
    expect(() => median([1, Number.NaN])).toThrow(/finite/);
  });
});

describe('cost per million callbacks', () => {
  test('each line is the published price times the measured quantity', () => {
    const cost = costPerMillion({
      ingestMsPerCallback: 1.2,
      workerMsPerBatch: 100.2,
      batchSize: 25,
      ingestMemoryMb: 256,
      workerMemoryMb: 256,
      writeUnitsPerCallback: 5,
      readUnitsPerCallback: 3,
      publishesPerCallback: 1.5,
    });
    const usd = Object.fromEntries(cost.lines.map((l) => [l.item, l.usd]));
    expect(usd['API Gateway HTTP API requests']).toBeCloseTo(1.0, 10);
    expect(usd['ingest Lambda requests']).toBeCloseTo(0.2, 10);
    // 1,000,000 invocations x 2 billed ms x 0.25 GB = 500 GB-s
    expect(usd['ingest Lambda duration']).toBeCloseTo(500 * PRICES.lambdaPerGbSecond, 10);
    // 1,000,000 SendMessage + 40,000 batches x (3 ReceiveMessage + 3 DeleteMessageBatch)
    // at $0.50 per million requests on a FIFO queue
    expect(usd['SQS FIFO requests']).toBeCloseTo(1.24 * 0.5, 10);
    expect(usd['worker Lambda requests']).toBeCloseTo(0.008, 10);
    // 40,000 batches x 101 billed ms x 0.25 GB = 1,010 GB-s
    expect(usd['worker Lambda duration']).toBeCloseTo(1010 * PRICES.lambdaPerGbSecond, 10);
    expect(usd['DynamoDB write request units']).toBeCloseTo(3.125, 10);
    expect(usd['DynamoDB read request units']).toBeCloseTo(0.375, 10);
    // 1,500,000 messages at $0.50 per million
    expect(usd['SNS publishes (task events)']).toBeCloseTo(0.75, 10);
    expect(cost.totalUsd).toBeCloseTo(6.098133434, 6);
  });

  test('Lambda duration is billed in whole milliseconds, at least one', () => {
    expect(billedMs(0.2)).toBe(1);
    expect(billedMs(1)).toBe(1);
    expect(billedMs(1.01)).toBe(2);
    expect(() =>
      costPerMillion({
        ingestMsPerCallback: Number.NaN,
        workerMsPerBatch: 1,
        batchSize: 25,
        ingestMemoryMb: 256,
        workerMemoryMb: 256,
        writeUnitsPerCallback: 1,
        readUnitsPerCallback: 0,
        publishesPerCallback: 0,
      }),
    ).toThrow(/ingestMsPerCallback/);
  });

  test('the memory, architecture and batch size come from serverless.yml', () => {
    const settings = loadDeployedSettings();
    expect(settings.architecture).toBe('arm64');
    expect(settings.batchSize).toBe(localStageSettings().mappings[0]!.batchSize);
    expect(settings.ingestMemoryMb).toBeGreaterThanOrEqual(128);
    expect(settings.workerMemoryMb).toBeGreaterThanOrEqual(128);
    const yaml = (ingestMemory: string) =>
      `provider:\n  architecture: arm64\nfunctions:\n  ingest:\n${ingestMemory}    timeout: 6\n  worker:\n    ` +
      `memorySize: 512\n    events:\n      - sqs:\n          batchSize: 10\n`;
    expect(readDeployedSettings(yaml('    memorySize: 128\n'))).toEqual({
      architecture: 'arm64',
      ingestMemoryMb: 128,
      workerMemoryMb: 512,
      batchSize: 10,
    });
    expect(() => readDeployedSettings(yaml(''))).toThrow(/functions\.ingest\.memorySize/);
  });
});

describe("the archive's cost per million callbacks", () => {
  const GB = 1024 ** 3;
  const inputs = {
    callbacksPerMonth: 1e9,
    activePartitions: 20,
    retentionDays: 360,
    recordsPerCallback: 1,
    recordBytes: 1024,
    billedBytes: 5120,
    gzipRatio: 0.1,
    recordingShare: 0.5,
    deliveryItemBytes: 924,
  };

  test('each line is the price times the quantity: records at 5 KB, objects per buffer, storage kept', () => {
    const cost = archiveCostPerMillion(inputs);
    const usd = (start: string) => cost.lines.find((l) => l.item.startsWith(start))!.usd;
    expect(usd('Firehose ingestion')).toBeCloseTo(((1e6 * 5120) / GB) * ARCHIVE_PRICES.firehosePerGbIngested, 10);
    expect(usd('dynamic partitioning, per GB')).toBeCloseTo(((1e6 * 1024) / GB) * 0.02, 10);
    // 20 partitions x 8,640 five-minute buffers a month, over 1,000 millions: per object and per S3 PUT.
    expect(usd('dynamic partitioning, per object')).toBeCloseTo(((20 * 8640) / 1000 / 1000) * (0.005 + 0.005), 10);
    expect(usd('JQ')).toBeCloseTo((720 * 0.07) / 1000, 10);
    // 0.1 GiB-ish of gzip kept 12 months at $0.023.
    expect(usd('S3 Standard')).toBeCloseTo(((1e6 * 1024 * 0.1) / GB) * 12 * 0.023, 10);
    // A month's objects read by four queries, a day's by one, the recording half by the task's history.
    const month = 1e9 * 1024 * 0.1;
    const scanned = (month / 30 + 3 * month + 0.5 * month) / 1000;
    expect(usd('Athena')).toBeCloseTo((scanned / 1024 ** 4) * 5, 10);
    expect(cost.totalUsd).toBeCloseTo(
      cost.lines.reduce((a, l) => a + l.usd, 0),
      10,
    );
  });

  test("fixed charges fall on few callbacks at low volume; the table's raw items: 90 days then, 7 now", () => {
    const low = archiveCostPerMillion({ ...inputs, callbacksPerMonth: 1e6 });
    // A million callbacks make no more objects than records.
    expect(low.lines.find((l) => l.item.includes('per object'))!.quantity).toBe('172,800 objects');
    expect(archiveCostPerMillion({ ...inputs, callbacksPerMonth: 1e5 }).lines[2]!.quantity).toBe('1,000,000 objects');
    // Each item and its byTaskTime copy, 100 bytes of overhead each, at $0.25 per GB-month.
    const gb = ((924 + 100) * 2 * 1e6) / GB;
    expect(low.dynamo.beforeUsd).toBeCloseTo(gb * 3 * 0.25, 10);
    expect(low.dynamo.nowUsd).toBeCloseTo(gb * (7 / 30) * 0.25, 10);
  });
});

describe('the archive part, tiny', () => {
  test('with the archive and without: the same units and requests, every callback archived once', async () => {
    const r = await benchArchive({ rounds: 1, batchesPerRound: 1 });
    for (const side of [r.archived, r.answered]) {
      expect(side.wcu).toBe(r.plain.wcu);
      expect(side.rcu).toBe(r.plain.rcu);
      expect(side.dynamoRequests).toEqual(r.plain.dynamoRequests);
      expect(side.ratio.n).toBe(1);
    }
    expect(r.firehose).toMatchObject({ callsPerBatch: 1, recordsPerCallback: 1, linesArchived: 10 });
    expect(r.firehose.billedBytes % 5120).toBe(0);
    expect(r.firehose.billedBytes).toBeGreaterThanOrEqual(r.firehose.recordBytes);
  }, 60_000);
});

describe('index writes of a task header', () => {
  const header = (status: string, sortAt: number) => ({
    g1pk: 'ROOM#r',
    g2pk: 'SESSION#s',
    g3pk: `STATUS#a#${status}`,
    g4pk: 'DAY#2025-11-22',
    sortAt,
  });

  test('a new header adds an entry to each index; an unchanged one writes none', () => {
    expect(indexWrites(null, header('recording', 1))).toBe(4);
    expect(indexWrites(header('recording', 1), header('recording', 1))).toBe(0);
  });

  test('a changed key is a delete and a put; a removed entry is one write', () => {
    expect(indexWrites(header('recording', 1), header('ended', 1))).toBe(2);
    // sortAt is the sort key of all four indexes.
    expect(indexWrites(header('recording', 1), header('recording', 2))).toBe(8);
    const { g1pk: _room, ...withoutRoom } = header('recording', 1);
    expect(indexWrites(header('recording', 1), withoutRoom)).toBe(1);
  });

  test('the byTaskTime index of the deliveries: a new delivery one unit per KB, the same again none', () => {
    const delivery = (raw: string, keyed = true) => ({
      pk: 'DLV#1:a#Sx',
      sk: '#',
      raw,
      ...(keyed ? { g5pk: 'EV#1:a#t', g5sk: '0000000000000001|k' } : {}),
    });
    expect(eventsIndexWrites(null, delivery('{}'))).toBe(1);
    expect(eventsIndexWrites(null, delivery('x'.repeat(1500)))).toBe(2);
    expect(eventsIndexWrites(delivery('{}'), delivery('{}'))).toBe(0);
    expect(eventsIndexWrites(delivery('{}'), delivery('{ }'))).toBe(1);
    expect(eventsIndexWrites(delivery('{}'), delivery('{}', false))).toBe(1);
    expect(eventsIndexWrites(null, delivery('{}', false))).toBe(0);
  });
});

describe('the realistic mix', () => {
  test('exactly the requested number of callbacks, of both services, each a valid SQS record', () => {
    const sends = generateMix(400, 'smoke');
    expect(sends).toHaveLength(400);
    expect(new Set(sends.map((s) => s.service))).toEqual(new Set(['recording', 'screenshot']));
    expect(sends.some((s) => s.duplicate)).toBe(true);
    expect(generateMix(400, 'smoke')).toEqual(sends);
    sends.forEach((send, i) => {
      const read = readRecord(toSqsRecord(send, i, 1_763_798_400_000));
      if (!read.ok) throw new Error(read.reason);
      expect(read.message.verdict).toBe('valid');
      expect(read.message.replayKey).toMatch(/^[0-9a-f]{64}$/);
      expect(parseCallback(read.message.service, read.message.body).ok).toBe(true);
      expect(kindOf(send)).toMatch(/^(recording [1-4]|screenshot [134]) /);
    });
  });
});

describe('the ingest part, tiny', () => {
  test('measures the handler and its baselines, and renders them', async () => {
    const result = await benchIngest({ rounds: 2, perRound: 5, cpuRounds: 2, cpuPerRound: 20 });
    expect(result.fixtures).toBeGreaterThanOrEqual(10);
    for (const summary of [
      result.handlerMs,
      result.bareSendMs,
      result.ratio,
      result.claimMs,
      result.barePutMs,
      result.claimRatio,
      result.cpu.claimUs,
      result.cpu.claimRatio,
      result.cpu.handlerUs,
      result.cpu.jsonParseUs,
      result.cpu.ratio,
    ]) {
      expect(summary.n).toBe(2);
      expect(summary.min).toBeGreaterThan(0);
      expect(summary.min).toBeLessThanOrEqual(summary.median);
      expect(summary.median).toBeLessThanOrEqual(summary.max);
    }
    // One JSON log line per callback, serialised by the handler.
    expect(result.logBytesPerCallback).toBeGreaterThan(100);
    // A delivery of the fixtures is under 1 KB: one write unit, and one in byTaskTime.
    expect(result.claimItem).toMatchObject({ writeUnits: 1, indexWriteUnits: 1 });
    expect(result.claimItem.maxBytes).toBeGreaterThan(result.bodyBytes.max);

    const results: BenchResults = {
      date: '2026-01-01T00:00:00.000Z',
      mode: 'quick',
      parts: ['ingest'],
      durationS: 1,
      machine: describeMachine(),
      ingest: result,
      missing: { 'end-to-end': 'not asked for' },
    };
    const markdown = renderMarkdown(results);
    expect(markdown).toContain('## 1. Ingest cost');
    expect(markdown).toContain('bare `SendMessage` of the same body');
    expect(markdown).toContain('the replay claim alone (added to the handler)');
    expect(markdown).toContain('end-to-end: not measured.');
    expect(renderSummary(results)).toMatch(/ingest handler time per callback.*\*\*[\d.]+×\*\*/);
  });
});

describe('task size, tiny', () => {
  test('a page of files or callbacks, a listing, a new image: the same on tasks of 10 images and 1,000', async () => {
    // Units and requests only: the heap per batch (a full garbage collection before each) is the bench's.
    const sizes = { small: 10, large: 1_000, listed: 10, listedLarge: 60 };
    const result = await benchTaskSize(sizes, undefined, { heap: false });
    expect(result.worker.heapPerBatch).toBeUndefined();
    // The recount read by pages (its result checked equal to the whole task's by the bench itself) reads what the
    // whole task read at once does, in more requests; its heap is the bench's.
    expect(result.recount.peakHeap).toBeUndefined();
    expect(result.recount.paged.rcu).toBeGreaterThan(0);
    expect(result.recount.paged.rcu).toBeLessThanOrEqual(result.recount.whole.rcu * 1.1);
    expect(result.recount.paged.requests).toBeGreaterThan(result.recount.whole.requests);
    const byRequest = Object.fromEntries(result.reads.map((r) => [r.request, r]));
    const page = byRequest['GET /tasks/{id}?filesLimit=200']!;
    const listing = byRequest['GET /tasks?appKey=...&limit=10']!;
    for (const r of [page, listing]) {
      expect(r.small.rcu).toBeGreaterThan(0);
      expect(r.large.rcu).toBeLessThanOrEqual(r.small.rcu * 1.2);
    }
    // The listing reads headers only: the same requests whatever the tasks hold.
    expect(listing.large.requests).toBe(listing.small.requests);
    expect(page.large.requests).toBe(page.small.requests);
    // A page of callbacks: one Query of the index of a task's callbacks by time, whatever the task holds.
    const events = byRequest['GET /tasks/{id}/events?limit=100']!;
    expect(events.small.rcu).toBeGreaterThan(0);
    expect(events.large.rcu).toBeLessThanOrEqual(events.small.rcu * 1.2);
    expect(events.large.requests).toBe(events.small.requests);
    // The worker's units and requests per new image do not grow with the images the task already has.
    expect(result.worker.small.rcu).toBeGreaterThan(0);
    expect(result.worker.large.rcu).toBeLessThanOrEqual(result.worker.small.rcu * 1.2);
    expect(result.worker.large.requests).toBe(result.worker.small.requests);
  });
});

describe('the read API part, tiny', () => {
  test('measures each kind of request against a bare GetItem, with its answer and DynamoDB requests', async () => {
    const result = await benchApi({ rounds: 2, perRound: 2, tasks: 12, files: 30 });
    expect(result.bareGetItemMs.n).toBe(2);
    const byRequest = Object.fromEntries(result.requests.map((r) => [r.request, r]));
    expect(byRequest['GET /tasks/rec-3']).toMatchObject({
      status: 200,
      items: 1,
      // The task's headers under its id (its status and counts are there), then one page of its files.
      dynamoRequests: { Query: 2 },
    });
    expect(byRequest['GET /tasks/img-big']).toMatchObject({ items: 30, dynamoRequests: { Query: 2 } });
    expect(byRequest['GET /tasks/img-big/events']).toMatchObject({ items: 32 });
    // The default listing covers 30 days, one index partition each, and the one of tomorrow; then the
    // headers in one batch: a row is its header, never a read of its task's items.
    expect(byRequest['GET /tasks']).toMatchObject({ items: 13, dynamoRequests: { Query: 31, BatchGetItem: 1 } });
    expect(byRequest['GET /tasks?appKey=app-1']).toMatchObject({
      items: 4,
      dynamoRequests: { Query: 1, BatchGetItem: 1 },
    });
    for (const r of result.requests) {
      expect(r.ms.n).toBe(2);
      expect(r.ratio.n).toBe(2);
      expect(r.responseBytes).toBeGreaterThan(0);
    }
    const results: BenchResults = {
      date: '2026-01-01T00:00:00.000Z',
      mode: 'quick',
      parts: ['api'],
      durationS: 1,
      machine: describeMachine(),
      api: result,
      missing: {},
    };
    expect(renderMarkdown(results)).toContain('## 4. Read API');
    expect(renderSummary(results)).toMatch(/read API GET \/tasks\/\{id\}, per request.*\*\*[\d.]+×\*\*/);
  });
});
