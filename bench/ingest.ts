// Part 1, ingest cost. (a) The time per callback of the ingest handler (route, body, minimal check,
// signature, replay claim, SendMessage) against an in-process fauxqs and dynalite, over a bare SendMessage of
// the same body on the same client and queue; beside them, the replay claim alone (its full parse, its
// delivery item and its conditional PutItem, on the same table client): the time the claim adds. (b) The
// handler's own CPU per callback with the queue and the table answered at once, over JSON.parse of the same
// body. The sides alternate round by round (AB, BA, AB, ...) so that they share the machine's noise, and each
// round gives one ratio.
import type { AddressInfo } from 'node:net';
import { type AttributeValue, type DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { buildApp } from 'fauxqs';
import { type LocalDynamo, startDynamo } from '../devkit/local/dynamo.ts';
import { claimItem, type SignedCallback } from '../lib/aws/dynamo/write/delivery-claim.ts';
import { itemBytes } from '../lib/aws/dynamo/table/limits.ts';
import { toItem } from '../lib/aws/dynamo/table/table-client.ts';
import { claimSignature, createClaimClient } from '../lib/ingest/claim.ts';
import { buildIngestDependencies, type IngestDependencies } from '../lib/ingest/config.ts';
import { createSqsClient } from '../lib/ingest/enqueue.ts';
import { handleCallbackRequest } from '../lib/ingest/handle-request.ts';
import { minimalCheck } from '../lib/domain/minimal-check.ts';
import { createLogger, setLogSink } from '../lib/log.ts';
import { BENCH_APP_KEY, loadFixtures, signedEvent, type Fixture } from './callbacks.ts';
import { BENCH_SECRET } from '../devkit/seeds/sqs-record.ts';
import { ratios, summarize, type Summary } from './stats.ts';

export interface IngestSizes {
  /** Rounds of the handler-versus-SendMessage comparison. */
  rounds: number;
  /** Callbacks per side per round. */
  perRound: number;
  cpuRounds: number;
  /** Handler calls per CPU round; the JSON.parse baseline runs `cpuBaselineFactor` times as many. */
  cpuPerRound: number;
}

export const ingestSizes = {
  full: { rounds: 20, perRound: 200, cpuRounds: 20, cpuPerRound: 2000 },
  quick: { rounds: 3, perRound: 20, cpuRounds: 3, cpuPerRound: 200 },
} satisfies Record<string, IngestSizes>;

/** Enough JSON.parse calls per round that the CPU clock's granularity does not matter. */
const cpuBaselineFactor = 20;

export interface IngestResult {
  fixtures: number;
  bodyBytes: { min: number; max: number };
  rounds: number;
  perRound: number;
  /** Milliseconds per callback, one value per round. */
  handlerMs: Summary;
  bareSendMs: Summary;
  /** handler / bare SendMessage, per round. */
  ratio: Summary;
  /** The replay claim alone, milliseconds per callback, one value per round (the time it adds to the handler). */
  claimMs: Summary;
  /** A bare PutItem of the same delivery item (no condition), on the same table client. */
  barePutMs: Summary;
  /** claim / bare PutItem, per round. */
  claimRatio: Summary;
  /** The claim's delivery item (what DynamoDB bills for its conditional PutItem), over the fixtures. */
  claimItem: { meanBytes: number; maxBytes: number; writeUnits: number; indexWriteUnits: number };
  cpu: {
    rounds: number;
    perRound: number;
    /** CPU microseconds (user + system) per callback, queue and table calls answered at once. */
    handlerUs: Summary;
    jsonParseUs: Summary;
    ratio: Summary;
    /** The replay claim's share of it: the claim alone, the table answering at once. */
    claimUs: Summary;
    claimRatio: Summary;
  };
  /** Bytes of log lines the handler wrote per callback (one JSON line each). */
  logBytesPerCallback: number;
}

const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };

/** fauxqs on 127.0.0.1 (its startFauxqs binds every interface). */
async function startQueue(): Promise<{ sqs: SQSClient; queueUrl: string; stop(): Promise<void> }> {
  const app = buildApp({ logger: false, defaultRegion: 'us-east-1' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  // The ingest's own client (its time-outs and retries), pointed at the emulator.
  const sqs = createSqsClient({ region: 'us-east-1', endpoint, credentials });
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'bench-ingest' }));
  // Requests go to the emulator's address whatever host fauxqs puts in its queue URLs.
  const queueUrl = new URL(new URL(QueueUrl!).pathname, endpoint).href;
  return {
    sqs,
    queueUrl,
    async stop() {
      sqs.destroy();
      await app.close();
    },
  };
}

/** dynalite, reached over HTTP by the ingest's own DynamoDB client (its time-outs and retries), as fauxqs is. */
async function startTable(): Promise<{ db: LocalDynamo; dynamo: DynamoDBClient; stop(): Promise<void> }> {
  const db = await startDynamo('bench-ingest');
  const dynamo = createClaimClient({ region: 'us-east-1', endpoint: db.endpoint, credentials });
  return {
    db,
    dynamo,
    async stop() {
      dynamo.destroy();
      await db.stop();
    },
  };
}

function dependencies(
  queueUrl: string,
  sqs: SQSClient,
  tableName: string,
  dynamo: DynamoDBClient,
  now: number,
): IngestDependencies {
  return buildIngestDependencies(
    {
      QUEUE_URL: queueUrl,
      TASKS_TABLE: tableName,
      SIGNATURE_MODE: 'enforce',
      CALLBACK_SECRETS: JSON.stringify({ [BENCH_APP_KEY]: [BENCH_SECRET] }),
    },
    // The real logger: serialising its line is part of the handler's work; the sink only counts bytes.
    { sqs, dynamo, now: () => now, logger: createLogger('ingest', 'info') },
  );
}

/** A fixture as the claim step takes it once its signature verified (`replayKey`: a signature of its own). */
function signedCallback(fixture: Fixture, replayKey: string, now: number): SignedCallback {
  const json: unknown = JSON.parse(fixture.raw);
  const check = minimalCheck(fixture.service, json);
  if (!check.ok) throw new Error(`fixture ${fixture.file} fails the minimal check: ${check.message}`);
  const { appKey, id, type } = check;
  const received = { receivedAt: now, requestId: replayKey, verdict: 'valid' as const, mode: 'enforce' as const };
  return { service: fixture.service, raw: fixture.raw, json, appKey, id, type, replayKey, ...received };
}

async function runBarePuts(items: readonly Record<string, AttributeValue>[], db: LocalDynamo, dynamo: DynamoDBClient) {
  for (const item of items) await dynamo.send(new PutItemCommand({ TableName: db.tableName, Item: item }));
}

async function runClaims(callbacks: readonly SignedCallback[], deps: IngestDependencies): Promise<void> {
  for (const callback of callbacks) {
    const outcome = await claimSignature(deps, callback);
    if (!('claim' in outcome) || outcome.claim !== 'stored') throw new Error('a fresh signature was not claimed');
  }
}

/** The claim's delivery items, as DynamoDB bills their put: a write unit per KB, in the table and in byTaskTime. */
function claimItemSizes(fixtures: readonly Fixture[], now: number): IngestResult['claimItem'] {
  const bytes = fixtures.map((f) => {
    const built = claimItem(signedCallback(f, `size-${f.file}`, now), 90);
    if (!('item' in built)) throw new Error(`fixture ${f.file} is not claimed: ${built.unclaimed}`);
    return itemBytes(toItem(built.item));
  });
  const units = bytes.reduce((n, b) => n + Math.ceil(b / 1024), 0) / bytes.length;
  // byTaskTime projects the whole delivery: its entry costs what the item does.
  return {
    meanBytes: bytes.reduce((a, b) => a + b, 0) / bytes.length,
    maxBytes: Math.max(...bytes),
    writeUnits: units,
    indexWriteUnits: units,
  };
}

/** `count` distinct signed events cycling through the fixtures (each with its own nonce and request id). */
function prepareEvents(
  fixtures: readonly Fixture[],
  count: number,
  round: number,
  now: number,
): APIGatewayProxyEventV2[] {
  return Array.from({ length: count }, (_, i) => signedEvent(fixtures[i % fixtures.length]!, `r${round}n${i}`, now));
}

async function runHandler(events: readonly APIGatewayProxyEventV2[], deps: IngestDependencies): Promise<void> {
  for (const event of events) {
    const response = await handleCallbackRequest(event, deps);
    if (response.statusCode !== 200) throw new Error(`the ingest answered ${response.statusCode}: ${response.body}`);
  }
}

async function runBareSend(bodies: readonly string[], sqs: SQSClient, queueUrl: string): Promise<void> {
  for (const body of bodies) {
    const out = await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    if (!out.MessageId) throw new Error('SendMessage returned no MessageId');
  }
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

function cpuMicros(fn: () => void): number {
  const before = process.cpuUsage();
  fn();
  const used = process.cpuUsage(before);
  return used.user + used.system;
}

async function cpuMicrosAsync(fn: () => Promise<void>): Promise<number> {
  const before = process.cpuUsage();
  await fn();
  const used = process.cpuUsage(before);
  return used.user + used.system;
}

export async function benchIngest(
  sizes: IngestSizes,
  progress: (line: string) => void = () => {},
): Promise<IngestResult> {
  const fixtures = loadFixtures();
  const now = Date.now();
  let logBytes = 0;
  let logLines = 0;
  const restoreSink = setLogSink((line) => {
    logBytes += Buffer.byteLength(line) + 1;
    logLines += 1;
  });
  const queue = await startQueue();
  const table = await startTable();
  try {
    const deps = dependencies(queue.queueUrl, queue.sqs, table.db.tableName, table.dynamo, now);
    const claimsOf = (round: number, count: number, side = 'c') =>
      Array.from({ length: count }, (_, i) =>
        signedCallback(fixtures[i % fixtures.length]!, `${side}${round}n${i}`, now),
      );
    // The very items the claims put, under keys of their own, ready to send.
    const itemsOf = (round: number, count: number) =>
      claimsOf(round, count, 'p').map((c) => toItem((claimItem(c, 90) as { item: Record<string, unknown> }).item));

    // Warm-up: connections, JIT, the emulators' first queue and table operations.
    const warm = prepareEvents(fixtures, 50, -1, now);
    await runHandler(warm, deps);
    await runBareSend(
      warm.map((e) => e.body!),
      queue.sqs,
      queue.queueUrl,
    );
    await runClaims(claimsOf(-1, 50), deps);
    await runBarePuts(itemsOf(-1, 50), table.db, table.dynamo);

    const handlerMs: number[] = [];
    const bareMs: number[] = [];
    const claimMs: number[] = [];
    const barePutMs: number[] = [];
    logBytes = 0;
    logLines = 0;
    for (let round = 0; round < sizes.rounds; round++) {
      const events = prepareEvents(fixtures, sizes.perRound, round, now);
      const bodies = events.map((e) => e.body!);
      const claims = claimsOf(round, sizes.perRound);
      const items = itemsOf(round, sizes.perRound);
      const per = (ms: number) => ms / sizes.perRound;
      const sides = [
        async () => handlerMs.push(per(await timed(() => runHandler(events, deps)))),
        async () => bareMs.push(per(await timed(() => runBareSend(bodies, queue.sqs, queue.queueUrl)))),
        async () => claimMs.push(per(await timed(() => runClaims(claims, deps)))),
        async () => barePutMs.push(per(await timed(() => runBarePuts(items, table.db, table.dynamo)))),
      ];
      for (const side of round % 2 === 0 ? sides : sides.reverse()) await side();
    }
    const logBytesPerCallback = logLines > 0 ? logBytes / (sizes.rounds * sizes.perRound) : 0;
    progress(`ingest: ${sizes.rounds} rounds of ${sizes.perRound} callbacks timed`);

    // CPU of the handler alone: the queue and the table answer at once, without I/O.
    const instantQueue = { send: async () => ({ MessageId: 'instant' }) } as unknown as SQSClient;
    const instantTable = { send: async () => ({}) } as unknown as DynamoDBClient;
    const cpuDeps = dependencies(queue.queueUrl, instantQueue, table.db.tableName, instantTable, now);
    await runHandler(prepareEvents(fixtures, 500, -2, now), cpuDeps);
    const handlerUs: number[] = [];
    const parseUs: number[] = [];
    const claimUs: number[] = [];
    let checksum = 0;
    for (let round = 0; round < sizes.cpuRounds; round++) {
      const events = prepareEvents(fixtures, sizes.cpuPerRound, 1000 + round, now);
      const bodies = events.map((e) => e.body!);
      const claims = claimsOf(1000 + round, sizes.cpuPerRound);
      const parses = sizes.cpuPerRound * cpuBaselineFactor;
      const sides = [
        async () => handlerUs.push((await cpuMicrosAsync(() => runHandler(events, cpuDeps))) / sizes.cpuPerRound),
        async () => claimUs.push((await cpuMicrosAsync(() => runClaims(claims, cpuDeps))) / sizes.cpuPerRound),
        async () => {
          const used = cpuMicros(() => {
            for (let i = 0; i < parses; i++) {
              const parsed = JSON.parse(bodies[i % bodies.length]!) as { type?: unknown };
              checksum += typeof parsed.type === 'number' ? parsed.type : 1;
            }
          });
          parseUs.push(used / parses);
        },
      ];
      for (const side of round % 2 === 0 ? sides : sides.reverse()) await side();
    }
    if (checksum === 0) throw new Error('the JSON.parse baseline parsed nothing');
    progress(`ingest: ${sizes.cpuRounds} CPU rounds of ${sizes.cpuPerRound} callbacks measured`);

    const bytes = fixtures.map((f) => Buffer.byteLength(f.raw));
    return {
      fixtures: fixtures.length,
      bodyBytes: { min: Math.min(...bytes), max: Math.max(...bytes) },
      rounds: sizes.rounds,
      perRound: sizes.perRound,
      handlerMs: summarize(handlerMs),
      bareSendMs: summarize(bareMs),
      ratio: summarize(ratios(handlerMs, bareMs)),
      claimMs: summarize(claimMs),
      barePutMs: summarize(barePutMs),
      claimRatio: summarize(ratios(claimMs, barePutMs)),
      claimItem: claimItemSizes(fixtures, now),
      cpu: {
        rounds: sizes.cpuRounds,
        perRound: sizes.cpuPerRound,
        handlerUs: summarize(handlerUs),
        jsonParseUs: summarize(parseUs),
        ratio: summarize(ratios(handlerUs, parseUs)),
        claimUs: summarize(claimUs),
        claimRatio: summarize(ratios(claimUs, parseUs)),
      },
      logBytesPerCallback,
    };
  } finally {
    setLogSink(restoreSink);
    await queue.stop();
    await table.stop();
  }
}
