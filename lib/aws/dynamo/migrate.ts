// `callbacks migrate`: a table written by the earlier layout brought over to this one (docs/task-store.md).
// That layout kept one task per id: a header `#` with counters, `FILE#<name>` items, an `EVENT#<rank>`
// ledger entry per distinct callback with its raw body, and `SIG#` claims. For each such task:
//
// 1. its header's facts are joined into the new header of its appKey, and each file's into the new file
//    item (joins: a task already written under the new layout, or a second run, loses nothing);
// 2. each ledger entry still there is applied as a callback whose raw body stays where it is (`L<timestamp>`
//    refs), which records its key (a second run finds them recorded);
// 3. what the ledger no longer holds (entries past their retention) is counted in small legacy items: the
//    task's callbacks and each file's attempts, written once;
// 4. the old header and files are deleted, the header last: a task whose old header is gone is done, so an
//    interrupted run is simply run again. Ledger entries stay, as the raw archive, until their TTL.
//
// Headers of this layout written before room and session index keys held the appKey get those keys
// rewritten (re-keyed), so that the listings of a room or session of one appKey find them. Tasks written
// before deliveries were keyed in the byTaskTime index get their raw bodies keyed there (indexed). Tasks written
// before tasks were armed are armed at their next deadline (./arm-unarmed.ts).
import { DeleteItemCommand, ScanCommand, type DynamoDBClient, type ScanCommandOutput } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { parseCallback } from '../../domain/callback.ts';
import {
  emptyTally,
  fileNameOf,
  joinFiles,
  joinHeaders,
  joinTallies,
  sameHeader,
  type FileRecord,
  type TaskHeader,
} from '../../domain/task.ts';
import type { Service } from '../../platform/services.ts';
import { WritePath } from './apply-callback.ts';
import { Deliveries } from './deliveries.ts';
import { HeaderCounts } from './header-counts.ts';
import { KnownItems } from './known-items.ts';
import {
  EVENTS_INDEXED,
  appKeyOf,
  bodyKey,
  eventsIndexKeys,
  fileFromItem,
  fileToItem,
  headerFactsOf,
  headerFromItem,
  headerToItem,
  markOf,
  identityIndexKeys,
  keysOf,
  tallyOf,
} from './items.ts';
import { ContentionError, TableClient, backoff, fromItem, noCapacity, type Item, type Key } from './table-client.ts';
import { DEFAULT_RAW_EVENT_TTL_DAYS, Keys, LegacyKeys } from './table.ts';
import { TaskQueries } from './queries.ts';
import { indexEvents, setIfPresent } from './index-events.ts';
import { errorSentence } from '../../text.ts';
import { inParallel } from '../../in-parallel.ts';
import { giveListingEntries, lacksListingEntries } from './listing-hours.ts';
import { armUnarmed, mayNeedArm } from './arm-unarmed.ts';
import { rekey, type RekeyedHeader } from './identity-rekey.ts';
import { defaultTimeSettings, type TimeSettings } from '../../domain/deadlines.ts';

export interface MigrationResult {
  /** Tasks of the earlier layout found. */
  tasks: number;
  /** Headers of this layout whose room and session index keys were rewritten to hold their appKey. */
  rekeyed: number;
  /** Of which brought over. */
  migrated: number;
  /** Callbacks whose ledger entry was there, recorded in the new layout. */
  callbacks: number;
  /** Callbacks counted without their raw body (expired from the ledger). */
  carried: number;
  /** Headers of this layout written before headers kept their task's counts, now counted into them. */
  counted: number;
  /** Tasks of this layout whose raw bodies were keyed in the byTaskTime index (`tasks events` by time). */
  indexed: number;
  /** Headers given their entries of the listings by time of change and of end. */
  listed: number;
  /** Headers without an arm whose facts of time can still become due, armed at their next deadline. */
  armed: number;
  failed: { taskId: string; error: string }[];
}

export interface MigrationOptions {
  client: DynamoDBClient;
  tableName: string;
  /** Count, write nothing. */
  dryRun?: boolean;
  /** After each task. */
  onTask?: (done: number, total: number) => void;
  /** Tasks brought over at the same time (default 4). */
  concurrency?: number;
  /** The clock the arms start from (default Date.now). */
  now?: () => number;
  /** The stage's durations the deadlines are worked out with (default lib/domain/deadlines.ts). */
  time?: TimeSettings;
}

const MAX_ATTEMPTS = 16;

/** What is left to bring over in a table. */
export interface MigrationWork {
  /** The task partitions that still hold a header of the earlier layout. */
  legacy: string[];
  /** Headers of this layout whose room or session index key is not the one this version writes. */
  rekey: RekeyedHeader[];
  /** Headers of this layout that keep no counts yet (written before headers kept them). */
  uncounted: Key[];
  /** Headers of this layout whose raw bodies are not all keyed in the byTaskTime index. */
  unindexed: Key[];
  /** Headers of this layout without their entries of the listings by time (`uh`, `eh`), as read. */
  unlisted: Item[];
  /** Headers of this layout without an arm (`db`) whose facts of time can still become due. */
  unarmed: Key[];
}

/** The work `migrateTable` would do: one Scan of the table's headers (read whole: a header is under 1 KB). */
export async function findMigrationWork(
  client: DynamoDBClient,
  tableName: string,
  time: TimeSettings = defaultTimeSettings,
): Promise<MigrationWork> {
  const work: MigrationWork = { legacy: [], rekey: [], uncounted: [], unindexed: [], unlisted: [], unarmed: [] };
  let start: Record<string, any> | undefined;
  do {
    const page: ScanCommandOutput = await client.send(
      new ScanCommand({
        TableName: tableName,
        FilterExpression: 'begins_with(pk, :t) AND (sk = :h OR begins_with(sk, :hp))',
        ExpressionAttributeValues: marshall({
          ':h': LegacyKeys.headerSk,
          ':t': Keys.taskPk(''),
          ':hp': Keys.headerPrefix,
        }),
        ExclusiveStartKey: start,
      }),
    );
    for (const raw of page.Items ?? []) {
      const item = fromItem(raw);
      if (item.sk === LegacyKeys.headerSk) {
        work.legacy.push(item.pk);
        continue;
      }
      if (item.nEvents === undefined) work.uncounted.push({ pk: item.pk, sk: item.sk });
      if (item[EVENTS_INDEXED] !== 1) work.unindexed.push({ pk: item.pk, sk: item.sk });
      if (lacksListingEntries(item, Date.now())) work.unlisted.push(item);
      if (mayNeedArm(item, time)) work.unarmed.push({ pk: item.pk, sk: item.sk });
      const held = { g1pk: item.g1pk, g2pk: item.g2pk };
      const wanted = identityIndexKeys({
        appKey: appKeyOf(item),
        roomId: item.roomId ?? null,
        sessionId: item.sessionId ?? null,
      });
      if (held.g1pk !== wanted.g1pk || held.g2pk !== wanted.g2pk)
        work.rekey.push({ key: { pk: item.pk, sk: item.sk }, held, wanted });
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return work;
}

const NOTHING_DONE = {
  tasks: 0,
  rekeyed: 0,
  migrated: 0,
  callbacks: 0,
  carried: 0,
  counted: 0,
  indexed: 0,
  listed: 0,
  armed: 0,
};

/** A migration that found nothing to do. */
export function noMigration(): MigrationResult {
  return { ...NOTHING_DONE, failed: [] };
}

export async function migrateTable(opts: MigrationOptions): Promise<MigrationResult> {
  const time = opts.time ?? defaultTimeSettings;
  const found = await findMigrationWork(opts.client, opts.tableName, time);
  const { legacy: pks, rekey: headers, uncounted } = found;
  const result: MigrationResult = { ...noMigration(), tasks: pks.length };
  const table = new TableClient(opts.client, opts.tableName);
  const counts = new HeaderCounts(table, new KnownItems(1000)); // a change hour recorded once per task
  const write = new WritePath(table, new Deliveries(table, DEFAULT_RAW_EVENT_TTL_DAYS, Date.now), new KnownItems(0), {
    maxAttempts: MAX_ATTEMPTS,
    inlineKeys: 4,
    knownFiles: 0,
    readAfterWrite: async () => null,
  });
  let done = 0;
  // The headers to arm: those found, and those of the tasks brought over.
  const unarmed = [...found.unarmed];
  await inParallel(pks, opts.concurrency ?? 4, async (pk) => {
    try {
      const brought = await migrateTask(table, write, counts, pk, opts.dryRun ?? false);
      unarmed.push(...brought.headers);
      result.migrated += 1;
      result.callbacks += brought.callbacks;
      result.carried += brought.carried;
    } catch (err) {
      result.failed.push({ taskId: pk.slice(Keys.taskPk('').length), error: errorSentence(err) });
    }
    opts.onTask?.(++done, pks.length);
  });
  // Headers of this layout that keep no counts: counted once from their items (a second run finds them counted).
  for (const key of uncounted) {
    const id = key.pk.slice(Keys.taskPk('').length);
    try {
      if (opts.dryRun || (await counts.recount(appKeyOf(key as Item), id, null, noCapacity()))) result.counted += 1;
    } catch (err) {
      result.failed.push({ taskId: id, error: errorSentence(err) });
    }
  }
  // Raw bodies keyed by time, the header marked last: a run stopped in between keys them again.
  const queries = new TaskQueries(table, Date.now);
  for (const key of found.unindexed) {
    try {
      if (!opts.dryRun) await indexEvents(table, queries, key);
      result.indexed += 1;
    } catch (err) {
      result.failed.push({ taskId: key.pk.slice(Keys.taskPk('').length), error: errorSentence(err) });
    }
  }
  // Entries of the listings by time, for headers written before them (one a worker wrote since has its own).
  for (const header of found.unlisted) {
    try {
      if (opts.dryRun || (await giveListingEntries(table, header, Date.now(), noCapacity()))) result.listed += 1;
    } catch (err) {
      result.failed.push({ taskId: header.pk.slice(Keys.taskPk('').length), error: errorSentence(err) });
    }
  }
  // After the tasks brought over, whose new headers were written with the right keys already.
  for (const header of headers) {
    if (opts.dryRun) result.rekeyed += 1;
    else if (await rekey(table, header)) result.rekeyed += 1;
  }
  // Last, once every header keeps its counts: the unarmed ones armed at their next deadline.
  const now = (opts.now ?? Date.now)();
  for (const key of unarmed) {
    try {
      if (await armUnarmed(table, key, now, time, opts.dryRun ?? false)) result.armed += 1;
    } catch (err) {
      result.failed.push({ taskId: key.pk.slice(Keys.taskPk('').length), error: errorSentence(err) });
    }
  }
  return result;
}

async function migrateTask(
  table: TableClient,
  write: WritePath,
  counts: HeaderCounts,
  pk: string,
  dryRun: boolean,
): Promise<{ callbacks: number; carried: number; headers: Key[] }> {
  const items: Item[] = [];
  for await (const item of table.queryAll({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': { S: pk } },
    ConsistentRead: true,
  })) {
    items.push(item);
  }
  const old = items.find((i) => i.sk === LegacyKeys.headerSk);
  if (!old) return { callbacks: 0, carried: 0, headers: [] };
  const oldFiles = items.filter((i) => i.sk.startsWith(LegacyKeys.filePrefix));
  const ledger = items.filter((i) => i.sk.startsWith(LegacyKeys.eventPrefix));
  const appKey: string = old.appKey;
  const service: Service = old.service;

  // The callbacks the ledger still holds, each with where its raw body stays.
  const callbacks = ledger.flatMap((entry) => {
    const parsed = parseCallback(entry.service ?? service, entry.raw);
    return parsed.ok ? [{ cb: parsed.callback, ref: `L${entry.timestamp}` }] : [];
  });
  // The earlier layout counted every callback under the id, whatever its appKey; a callback of another
  // appKey is recorded in that appKey's own task here, and leaves this one's count.
  const uploads = new Map<string, number>();
  for (const { cb } of callbacks) {
    const name = cb.upload ? fileNameOf(cb) : null;
    if (name) uploads.set(name, (uploads.get(name) ?? 0) + 1);
  }
  const carried = Math.max(0, (old.eventCount ?? 0) - callbacks.length);
  if (dryRun) return { callbacks: callbacks.length, carried, headers: [] };

  await joinInto(table, { pk, sk: Keys.headerSk(appKey) }, (current) => {
    if (current && current.service !== service)
      throw new Error(`appKey ${appKey} has a ${current.service} task with this id; this one is a ${service} task`);
    const header = current ? joinHeaders(headerFromItem(current), legacyHeader(old)) : legacyHeader(old);
    const tally = joinTallies(tallyOf(current), { lastError: old.lastError ?? null, updatedAt: old.updatedAt ?? null });
    const same = current && sameHeader(headerFromItem(current), header) && sameJson(tally, tallyOf(current));
    return same ? null : headerToItem({ pk, sk: Keys.headerSk(appKey) }, header, tally, keysOf(current), current);
  });
  for (const oldFile of oldFiles) {
    const record = legacyFile(oldFile);
    const key = { pk, sk: Keys.fileSk(appKey, record.fileName) };
    await joinInto(table, key, (current) => {
      const joined = current ? joinFiles(fileFromItem(current), record) : record;
      if (current && sameJson(joined, fileFromItem(current))) return null;
      const item = fileToItem(key, joined, current ? tallyOf(current) : emptyTally(), keysOf(current), markOf(current));
      if (current?.sp) item.sp = true;
      return item;
    });
  }
  for (const { cb, ref } of callbacks) {
    const outcome = await write.applyStored(cb, ref);
    if (outcome === 'quarantined') throw new Error(`callback ${cb.key} can no longer be stored`);
    await setIfPresent(
      table,
      bodyKey(cb.appKey, cb.id, cb.key, ref),
      eventsIndexKeys(cb.appKey, cb.id, cb.timestamp, cb.key),
    );
  }

  // What the ledger no longer holds, counted once: a second run finds these written.
  const once = (item: Item) => table.putIf(item, 'attribute_not_exists(pk)', undefined, noCapacity());
  if (carried > 0) await once({ pk, sk: Keys.legacySk(appKey), events: carried });
  for (const oldFile of oldFiles) {
    const attempts = (oldFile.attempts ?? 0) - (uploads.get(oldFile.fileName) ?? 0);
    if (attempts > 0)
      await once({ pk, sk: Keys.legacyFileSk(appKey, oldFile.fileName), fileName: oldFile.fileName, attempts });
  }
  // Every header the task's callbacks went to counts them, before the old items go (a run stopped here
  // is run again whole).
  const id = pk.slice(Keys.taskPk('').length);
  const headers: Key[] = [];
  for (const key of new Set([appKey, ...callbacks.map(({ cb }) => cb.appKey)])) {
    const header = await counts.recount(key, id, null, noCapacity());
    if (header) await giveListingEntries(table, header, Date.now(), noCapacity());
    headers.push({ pk, sk: Keys.headerSk(key) });
  }

  for (const item of [...oldFiles, old]) {
    await table.client.send(
      new DeleteItemCommand({ TableName: table.table, Key: marshall({ pk: item.pk, sk: item.sk }) }),
    );
  }
  return { callbacks: callbacks.length, carried, headers };
}

/** A versioned read-join-put of one item; `join` gives the item to put, or null when nothing changes. */
async function joinInto(table: TableClient, key: Key, join: (current: Item | null) => Item | null): Promise<void> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    if (attempt > 1) await backoff(attempt);
    const current = await table.get(key, noCapacity());
    const next = join(current);
    if (!next || (await table.putVersioned(next, current?.ver, noCapacity()))) return;
  }
  throw new ContentionError(`${key.pk} ${key.sk} stayed contended`);
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The facts of an earlier header (its counters, status and tokens are not facts: they are recounted). */
function legacyHeader(item: Item): TaskHeader {
  return {
    ...headerFactsOf(item),
    id: item.id,
    identRank: item.identRank,
    // The identity's timestamp is the first 16 digits of its rank, after the start-first flag.
    identAt: Number(String(item.identRank).slice(1, 17)),
    appKey: item.appKey,
    configRank: item.configRank ?? null,
    startRank: item.startRank ?? null,
  };
}

function legacyFile(item: Item): FileRecord {
  return {
    fileName: item.fileName,
    sizeRank: item.sizeRank ?? null,
    size: item.size ?? null,
    upload: item.upload ?? null,
    firstFailureAt: item.firstFailureAt ?? null,
    attempts: 0,
  };
}
