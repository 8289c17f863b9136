// The archive's cost per million callbacks on AWS (docs/archive.md), from what part `archive` measured (records
// and bytes per callback, how well the lines compress, a delivery item's size) and list prices: Data Firehose
// ingestion with its 5 KB rounding, dynamic partitioning's charges per GB, per object and per JQ hour, S3 storage
// and PUTs, Athena's scans of the five docs queries; beside the raw items DynamoDB keeps, 90 days before and 7 now.
// Pure arithmetic, checked by hand and by the smoke test.
import { DEFAULT_RAW_EVENT_TTL_DAYS } from '../lib/aws/dynamo/table/table.ts';
import { STORAGE_PRICES } from './cost.ts';

/** The prices, and where and when they were read. */
export const ARCHIVE_PRICES = {
  statedAs:
    'us-east-1 list prices: Athena and S3 storage as in /work/shared/NOTES.md; Firehose and S3 requests from ' +
    "AWS's pricing pages as the search quoted them on 2026-11-28",
  /** Direct PUT, the first 500 TB of a month; each record is billed rounded up to 5 KB. */
  firehosePerGbIngested: 0.029,
  /** Dynamic partitioning: per GB delivered, per 1,000 objects delivered, per JQ processing hour. */
  partitioningPerGb: 0.02,
  partitioningPer1000Objects: 0.005,
  jqPerHour: 0.07,
  s3PerGbMonth: 0.023,
  s3PutPer1000: 0.005,
  athenaPerTb: 5,
} as const;

const GB = 1024 ** 3;
const TB = 1024 ** 4;
/** Athena bills each query at least 10 MB. */
const ATHENA_LEAST_BYTES = 10 * 1024 ** 2;
const MONTH_HOURS = 30 * 24;
/** The stream's buffer interval (infra/archive.yml): at most one object per partition per interval. */
const BUFFER_S = 300;
/** DynamoDB's overhead per stored item. */
const ITEM_OVERHEAD_BYTES = 100;
/** What the table kept before the archive. */
const RAW_DAYS_BEFORE = 90;

export interface ArchiveCostInputs {
  callbacksPerMonth: number;
  /** Partitions written to all month long: (service, appKey) pairs with traffic in every buffer interval at most. */
  activePartitions: number;
  /** How long the bucket keeps the objects (archiveRetentionDays). */
  retentionDays: number;
  recordsPerCallback: number;
  recordBytes: number;
  /** A record's bytes rounded up to Firehose's 5 KB. */
  billedBytes: number;
  gzipRatio: number;
  recordingShare: number;
  deliveryItemBytes: number;
}

export interface ArchiveCostLine {
  item: string;
  quantity: string;
  usd: number;
}

export interface ArchiveCost {
  inputs: ArchiveCostInputs;
  lines: ArchiveCostLine[];
  totalUsd: number;
  /** The table's raw items (the delivery and its byTaskTime copy), per million callbacks: 90 days, and now. */
  dynamo: { beforeUsd: number; nowUsd: number; nowDays: number };
}

/** The share of a month's objects each of the five docs queries (docs/archive.md) reads, run over that month. */
function queryShares(recordingShare: number): number[] {
  return [
    // A window's callbacks of one appKey: one day, both services.
    1 / 30,
    // Callbacks set aside, by reason; a storage host's upload failures; the daily volume per appKey: the month.
    1,
    1,
    1,
    // A task's whole history: the recording callbacks of every day kept (a month here).
    recordingShare,
  ];
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

/** The archive's cost per million callbacks at `inputs.callbacksPerMonth` a month. */
export function archiveCostPerMillion(inputs: ArchiveCostInputs): ArchiveCost {
  const p = ARCHIVE_PRICES;
  const millions = inputs.callbacksPerMonth / 1e6;
  const records = 1e6 * inputs.recordsPerCallback;
  const stored = (records * inputs.recordBytes * inputs.gzipRatio) / GB;
  // Each partition's buffer writes an object when it holds lines at its interval's end: no more objects than lines.
  const windows = (MONTH_HOURS * 3600) / BUFFER_S;
  const objects = Math.min(records * millions, inputs.activePartitions * windows) / millions;
  const monthBytes = records * millions * inputs.recordBytes * inputs.gzipRatio;
  const scans = queryShares(inputs.recordingShare).map((share) => Math.max(share * monthBytes, ATHENA_LEAST_BYTES));
  const scanned = scans.reduce((a, b) => a + b, 0) / millions;
  const keptMonths = inputs.retentionDays / 30;
  const billedGb = (records * inputs.billedBytes) / GB;
  const lines: ArchiveCostLine[] = [
    {
      item: 'Firehose ingestion, each record rounded up to 5 KB',
      quantity: `${fmt(records)} records × ${fmt(inputs.billedBytes)} B = ${billedGb.toFixed(2)} GB`,
      usd: billedGb * p.firehosePerGbIngested,
    },
    {
      item: 'dynamic partitioning, per GB',
      quantity: `${((records * inputs.recordBytes) / GB).toFixed(3)} GB`,
      usd: ((records * inputs.recordBytes) / GB) * p.partitioningPerGb,
    },
    {
      item: 'dynamic partitioning, per object, and the S3 PUT of each',
      quantity: `${fmt(objects)} objects`,
      usd: (objects / 1000) * (p.partitioningPer1000Objects + p.s3PutPer1000),
    },
    {
      item: 'JQ processing hours, at most every hour of the month (a fixed cost, shared by the month)',
      quantity: `${MONTH_HOURS} h / ${fmt(millions)} million`,
      usd: (MONTH_HOURS * p.jqPerHour) / millions,
    },
    {
      item: `S3 Standard storage, gzip, kept ${inputs.retentionDays} days`,
      quantity: `${stored.toFixed(3)} GB × ${keptMonths.toFixed(1)} months`,
      usd: stored * keptMonths * p.s3PerGbMonth,
    },
    {
      item: 'Athena, the five docs queries once a month (at least 10 MB each)',
      quantity: `${(scanned / GB).toFixed(3)} GB scanned`,
      usd: (scanned / TB) * p.athenaPerTb,
    },
  ];
  const itemGb = ((inputs.deliveryItemBytes + ITEM_OVERHEAD_BYTES) * 2 * 1e6) / GB;
  const kept = (days: number) => itemGb * (days / 30) * STORAGE_PRICES.dynamoPerGbMonth;
  return {
    inputs,
    lines,
    totalUsd: lines.reduce((a, l) => a + l.usd, 0),
    dynamo: {
      beforeUsd: kept(RAW_DAYS_BEFORE),
      nowUsd: kept(DEFAULT_RAW_EVENT_TTL_DAYS),
      nowDays: DEFAULT_RAW_EVENT_TTL_DAYS,
    },
  };
}
