// The reads of the storage incidents (./storage-incidents.ts writes them): each storage with failures, as its item
// keeps it, and a storage's incidents as reported, newest first; the open ones, for the read API and the console.
// Reads only: the read API's bundle carries no write.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { ProbeResult, StorageIncident } from '../../../domain/storage-incidents.ts';
import type { Capacity } from '../../../domain/task-store.ts';
import { type Item, noCapacity, type TableReader } from '../table/table-client.ts';
import { Keys } from '../table/table.ts';

const S = (value: string): AttributeValue => ({ S: value });

/** A storage's state as its item keeps it. */
export interface StorageTracker {
  appKey: string;
  storage: string;
  /** Its window of failures (platform time): the first, the latest, the latest success since; null: none open. */
  windowStart: number | null;
  latestFailure: number | null;
  latestSuccess: number | null;
  /** The failures up to this one belong to an incident already resolved (a late event opens nothing). */
  resolvedThrough: number | null;
  /** Its open incident's id, when it published its opening, when the sweep that resolves it began to. */
  incidentId: string | null;
  openedAt: number | null;
  openedPublished: boolean;
  resolvedAt: number | null;
  resolution: StorageIncident['resolution'];
  probe: ProbeResult | null;
}

function trackerOf(item: Item): StorageTracker {
  return {
    appKey: item.ak,
    storage: item.sg,
    windowStart: item.wf ?? null,
    latestFailure: item.lf ?? null,
    latestSuccess: item.ls ?? null,
    resolvedThrough: item.rl ?? null,
    incidentId: item.oi ?? null,
    openedAt: item.oa ?? null,
    openedPublished: item.op === true,
    resolvedAt: item.rs ?? null,
    resolution: item.rr ?? null,
    probe: item.pr ? (JSON.parse(item.pr) as ProbeResult) : null,
  };
}

/** Every storage with failures (one Query of a small partition). */
export async function storageTrackers(table: TableReader, cap: Capacity = noCapacity()): Promise<StorageTracker[]> {
  const out: StorageTracker[] = [];
  for await (const item of table.queryAll(
    {
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': S(Keys.storagesPk) },
      ConsistentRead: true,
    },
    cap,
  ))
    out.push(trackerOf(item));
  return out;
}

/** A storage's incidents, newest first. */
export async function storageIncidents(
  table: TableReader,
  appKey: string,
  storage: string,
  limit = 20,
  cap: Capacity = noCapacity(),
): Promise<StorageIncident[]> {
  const out: StorageIncident[] = [];
  for await (const item of table.queryAll(
    {
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': S(Keys.incidentsPk(appKey, storage)) },
      ScanIndexForward: false,
      Limit: limit,
    },
    cap,
  )) {
    out.push(JSON.parse(item.inc) as StorageIncident);
    if (out.length >= limit) break;
  }
  return out;
}

/** The incidents open now, of one appKey or of all: a Query of the storages, one of each open one's incidents. */
export async function openIncidents(table: TableReader, appKey?: string): Promise<StorageIncident[]> {
  const open = (await storageTrackers(table)).filter(
    (t) => t.incidentId !== null && (appKey === undefined || t.appKey === appKey),
  );
  const latest = await Promise.all(open.map((t) => storageIncidents(table, t.appKey, t.storage, 1)));
  return latest.flat().filter((i) => i.resolvedAt === null);
}
