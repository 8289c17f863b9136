// Part 5, cost per million callbacks on AWS: published list prices applied to the counts measured in the
// same run (requests, write and read units, Lambda duration at the configured memory). Pure arithmetic,
// so that it can be checked by hand and by the smoke test.
import { readFileSync } from 'node:fs';
import { DEFAULT_RAW_EVENT_TTL_DAYS } from '../lib/aws/dynamo/table/table.ts';

/** The prices, and where and when they were read. */
export const PRICES = {
  statedAs: 'us-east-1 list prices as recorded in 2026',
  httpApiPerMillionRequests: 1.0,
  lambdaPerMillionRequests: 0.2,
  /** arm64 */
  lambdaPerGbSecond: 0.0000133334,
  /** A FIFO queue's (a standard queue's are $0.40), per 64 KiB chunk; every callback body is far below that. */
  sqsPerMillionRequests: 0.5,
  dynamoPerMillionWriteUnits: 0.625,
  dynamoPerMillionReadUnits: 0.125,
  /** Per message published (PublishBatch bills each message); deliveries from SNS to SQS are free. */
  snsPerMillionPublishes: 0.5,
} as const;

/**
 * Prices of what the report states beside the total, not in it (us-east-1 list prices as recorded in
 * 2026): CloudWatch Logs ingestion, and DynamoDB Standard storage for the raw callbacks, kept as long as
 * RAW_EVENT_TTL_DAYS says (its default).
 */
export const STORAGE_PRICES = {
  logsPerGbIngested: 0.5,
  dynamoPerGbMonth: 0.25,
  rawEventTtlDays: DEFAULT_RAW_EVENT_TTL_DAYS,
} as const;

/** Most messages one ReceiveMessage returns and one DeleteMessageBatch deletes. */
export const SQS_MAX_MESSAGES_PER_CALL = 10;

export interface DeployedSettings {
  architecture: string;
  ingestMemoryMb: number;
  workerMemoryMb: number;
  batchSize: number;
}

/**
 * The few settings the cost depends on, read from serverless.yml (line by line: the file's layout is
 * plain, and a missing setting is an error rather than a guess).
 */
export function readDeployedSettings(yaml: string): DeployedSettings {
  const lines = yaml.split('\n');
  const fail = (what: string): never => {
    throw new Error(`serverless.yml: cannot find ${what}`);
  };
  const architecture = /^\s{2}architecture:\s*(\S+)/m.exec(yaml)?.[1] ?? fail('provider.architecture');
  const functionsAt = lines.findIndex((l) => /^functions:\s*$/.test(l));
  if (functionsAt < 0) fail('functions:');
  const blockOf = (name: string): string[] => {
    const start = lines.findIndex((l, i) => i > functionsAt && l === `  ${name}:`);
    if (start < 0) fail(`functions.${name}`);
    const out: string[] = [];
    for (let i = start + 1; i < lines.length; i++) {
      const l = lines[i]!;
      if (/^\S/.test(l) || /^ {2}\S/.test(l)) break;
      out.push(l);
    }
    return out;
  };
  const numberIn = (block: string[], key: string, where: string): number => {
    for (const l of block) {
      const m = new RegExp(`^\\s+${key}:\\s*(\\d+)\\s*$`).exec(l);
      if (m) return Number(m[1]);
    }
    return fail(where);
  };
  const ingest = blockOf('ingest');
  const worker = blockOf('worker');
  return {
    architecture,
    ingestMemoryMb: numberIn(ingest, 'memorySize', 'functions.ingest.memorySize'),
    workerMemoryMb: numberIn(worker, 'memorySize', 'functions.worker.memorySize'),
    batchSize: numberIn(worker, 'batchSize', 'functions.worker.events[].sqs.batchSize'),
  };
}

export function loadDeployedSettings(): DeployedSettings {
  return readDeployedSettings(readFileSync(new URL('../serverless.yml', import.meta.url), 'utf8'));
}

export interface CostInputs {
  /** Ingest Lambda time per callback (each callback is one invocation). */
  ingestMsPerCallback: number;
  /** Worker Lambda time per full batch of `batchSize` callbacks. */
  workerMsPerBatch: number;
  batchSize: number;
  ingestMemoryMb: number;
  workerMemoryMb: number;
  /** DynamoDB write units per callback, index writes included. */
  writeUnitsPerCallback: number;
  readUnitsPerCallback: number;
  /** Task events published per callback (SNS messages). */
  publishesPerCallback: number;
}

export interface CostLine {
  item: string;
  /** How much of it a million callbacks use, in words and numbers. */
  quantity: string;
  usd: number;
}

export interface CostBreakdown {
  lines: CostLine[];
  totalUsd: number;
}

const MILLION = 1_000_000;

/** Lambda bills duration per invocation in whole milliseconds, rounded up. */
export function billedMs(ms: number): number {
  return Math.max(1, Math.ceil(ms));
}

/** The prices `costPerMillion` applies: these, or those an earlier run recorded (a standard queue's SQS price). */
export type Prices = { [K in keyof typeof PRICES]: K extends 'statedAs' ? string : number };

export function costPerMillion(input: CostInputs, prices: Prices = PRICES): CostBreakdown {
  for (const [name, value] of Object.entries(input)) {
    if (!Number.isFinite(value) || value < 0)
      throw new Error(`cost input ${name} must be a non-negative number, got ${value}`);
  }
  if (!(input.batchSize >= 1)) throw new Error('batch size must be at least 1');
  const batches = MILLION / input.batchSize;
  const callsPerBatch = Math.ceil(input.batchSize / SQS_MAX_MESSAGES_PER_CALL);
  const sqsRequests = MILLION + 2 * callsPerBatch * batches;
  const ingestGbS = ((MILLION * billedMs(input.ingestMsPerCallback)) / 1000) * (input.ingestMemoryMb / 1024);
  const workerGbS = ((batches * billedMs(input.workerMsPerBatch)) / 1000) * (input.workerMemoryMb / 1024);
  const writes = MILLION * input.writeUnitsPerCallback;
  const reads = MILLION * input.readUnitsPerCallback;
  const publishes = MILLION * input.publishesPerCallback;
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const lines: CostLine[] = [
    {
      item: 'API Gateway HTTP API requests',
      quantity: `${fmt(MILLION)} requests`,
      usd: prices.httpApiPerMillionRequests,
    },
    { item: 'ingest Lambda requests', quantity: `${fmt(MILLION)} invocations`, usd: prices.lambdaPerMillionRequests },
    {
      item: 'ingest Lambda duration',
      quantity:
        `${fmt(MILLION)} x ${billedMs(input.ingestMsPerCallback)} ms at ${input.ingestMemoryMb} MB = ` +
        `${fmt(ingestGbS)} GB-s`,
      usd: ingestGbS * prices.lambdaPerGbSecond,
    },
    {
      item: 'SQS FIFO requests',
      quantity:
        `${fmt(MILLION)} SendMessage + ${fmt(callsPerBatch * batches)} ReceiveMessage + ` +
        `${fmt(callsPerBatch * batches)} DeleteMessageBatch`,
      usd: (sqsRequests / MILLION) * prices.sqsPerMillionRequests,
    },
    {
      item: 'worker Lambda requests',
      quantity: `${fmt(batches)} batches of ${input.batchSize}`,
      usd: (batches / MILLION) * prices.lambdaPerMillionRequests,
    },
    {
      item: 'worker Lambda duration',
      quantity:
        `${fmt(batches)} x ${billedMs(input.workerMsPerBatch)} ms at ${input.workerMemoryMb} MB = ` +
        `${fmt(workerGbS)} GB-s`,
      usd: workerGbS * prices.lambdaPerGbSecond,
    },
    {
      item: 'DynamoDB write request units',
      quantity: `${fmt(writes)} units`,
      usd: (writes / MILLION) * prices.dynamoPerMillionWriteUnits,
    },
    {
      item: 'DynamoDB read request units',
      quantity: `${fmt(reads)} units`,
      usd: (reads / MILLION) * prices.dynamoPerMillionReadUnits,
    },
    {
      item: 'SNS publishes (task events)',
      quantity: `${fmt(publishes)} messages (deliveries to SQS subscribers are free)`,
      usd: (publishes / MILLION) * prices.snsPerMillionPublishes,
    },
  ];
  return { lines, totalUsd: lines.reduce((sum, l) => sum + l.usd, 0) };
}
