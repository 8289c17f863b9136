// Part 3, over a network: the worker against a bare PutItem loop when every request of both sides waits 5 ms more
// before it goes out, as a round trip to DynamoDB (and to SNS, for the task events) does from a Lambda function,
// where against the in-process emulator a request costs about a millisecond. What the worker then takes is set by
// the round trips it waits for one after the other, not by how dear each request is to the emulator. The records
// are as the ingest enqueues a signed callback: its delivery claimed (`replayClaim: stored`), so the worker writes
// none, as deployed.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { SNSClient } from '@aws-sdk/client-sns';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { snsEventPublisher } from '../lib/aws/sns/task-events.ts';
import { inParallel } from '../lib/in-parallel.ts';
import type { Logger } from '../lib/log.ts';
import { Attr } from '../lib/queue-message.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { generateMix } from './callbacks.ts';
import { fifoBatches, fifoRecords } from './fifo-batches.ts';

/** What a network round trip adds to each request. */
export const ROUND_TRIP_MS = 5;

export interface RoundTripsResult {
  roundTripMs: number;
  rounds: number;
  callbacksPerRound: number;
  /** worker / bare PutItem callbacks per second, per round. */
  ratios: number[];
  workerPerSecond: number[];
  barePerSecond: number[];
  /** Requests per batch of the worker (DynamoDB and SNS), and how many went out one after the other. */
  requestsPerCallback: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Every request of `client` waits `ms` before it is sent. */
function withRoundTrip<C extends DynamoDBClient | SNSClient>(client: C, ms: number, count: () => void): C {
  client.middlewareStack.add(
    (next) => async (args) => {
      count();
      await sleep(ms);
      return next(args);
    },
    { step: 'finalizeRequest', name: 'benchRoundTrip' },
  );
  return client;
}

/** Records as the ingest enqueues signed callbacks: claimed, so the worker writes no delivery. */
function claimed(records: SQSRecord[]): SQSRecord[] {
  for (const r of records)
    r.messageAttributes[Attr.claim] = {
      stringValue: 'stored',
      stringListValues: [],
      binaryListValues: [],
      dataType: 'String',
    };
  return records;
}

export async function benchRoundTrips(opts: {
  dynamo: DynamoDBClient;
  sns: SNSClient;
  tableName: string;
  topicArn: string;
  rounds: number;
  batchesPerRound: number;
  batchSize: number;
  concurrency: number;
  log: Logger;
}): Promise<RoundTripsResult> {
  let requests = 0;
  const dynamo = withRoundTrip(opts.dynamo, ROUND_TRIP_MS, () => (requests += 1));
  const sns = withRoundTrip(opts.sns, ROUND_TRIP_MS, () => (requests += 1));
  const store = new DynamoTaskStore({ client: dynamo, tableName: opts.tableName });
  const events = snsEventPublisher(sns, opts.topicArn);
  const perRound = opts.batchesPerRound * opts.batchSize;
  const records = claimed(fifoRecords(generateMix(opts.rounds * perRound, 'bench-round-trips'), 3_000_000, Date.now()));
  const ratios: number[] = [];
  const workerPerSecond: number[] = [];
  const barePerSecond: number[] = [];
  let workerRequests = 0;
  for (let round = 0; round < opts.rounds; round++) {
    const slice = records.slice(round * perRound, (round + 1) * perRound);
    const batches = fifoBatches(slice, opts.batchSize).map((Records): SQSEvent => ({ Records }));
    const worker = async () => {
      const before = requests;
      const started = performance.now();
      for (const event of batches)
        await processBatch(event, { store, log: opts.log, concurrency: opts.concurrency, events });
      workerRequests += requests - before;
      return slice.length / ((performance.now() - started) / 1000);
    };
    const bare = async () => {
      const started = performance.now();
      for (const event of batches)
        await inParallel(event.Records, opts.concurrency, async (r) => {
          const Item = { pk: { S: `BARE#${r.messageId}` }, sk: { S: '#' }, raw: { S: r.body } };
          await dynamo.send(new PutItemCommand({ TableName: opts.tableName, Item }));
        });
      return slice.length / ((performance.now() - started) / 1000);
    };
    // The two sides take turns at going first.
    const [w, b] =
      round % 2 === 0 ? [await worker(), await bare()] : (([x, y]) => [y, x])([await bare(), await worker()]);
    workerPerSecond.push(w!);
    barePerSecond.push(b!);
    ratios.push(w! / b!);
  }
  return {
    roundTripMs: ROUND_TRIP_MS,
    rounds: opts.rounds,
    callbacksPerRound: perRound,
    ratios,
    workerPerSecond,
    barePerSecond,
    requestsPerCallback: workerRequests / records.length,
  };
}
