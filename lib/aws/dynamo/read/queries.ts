// Reads of one task's items, and of the quarantine. A task is found by id (its appKey said, or the only
// appKey that has one) and added up from its items: counts, status, updatedAt and lastError are computed
// on read (../table/items.ts). The paginated reads and listings build on these (./read-pages.ts).
import { QueryCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  AmbiguousTaskError,
  type Capacity,
  type QuarantineEntry,
  type QuarantineQuery,
} from '../../../domain/task-store.ts';
import type { FileRecord } from '../../../domain/task.ts';
import { filesWithAttempts } from '../table/file-attempts.ts';
import { assemble, type AssembledTask } from '../table/assembled-task.ts';
import { appKeyOf } from '../table/items.ts';
import { noCapacity, type Item, type Key, type TableReader } from '../table/table-client.ts';
import { DEFAULT_RAW_EVENT_TTL_DAYS, Index, Keys, SORT_AT, dayOf } from '../table/table.ts';

/**
 * The task read strongly consistent, as it stands right after a write: its header and its parts in one
 * Query, from the header's sort key to the last of its parts (`H#` sorts before `P#`). Items of another
 * appKey's task with the same id may fall in between; they are left out. A function of its own, outside
 * TaskQueries, so that the write path (and the worker's bundle) carries no query of an index.
 */
export async function readAfterWrite(
  table: TableReader,
  appKey: string,
  id: string,
  cap: Capacity = noCapacity(),
): Promise<AssembledTask | null> {
  const headerSk = Keys.headerSk(appKey);
  const partsPrefix = Keys.partsPrefix(appKey);
  let header: Item | null = null;
  const parts: Item[] = [];
  for await (const item of table.queryAll(
    {
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :h AND :last',
      ExpressionAttributeValues: {
        ':pk': { S: Keys.taskPk(id) },
        ':h': { S: headerSk },
        // Every part's sort key goes on with an ASCII letter after the prefix: below the last code point.
        ':last': { S: `${partsPrefix}\u{10FFFF}` },
      },
      ConsistentRead: true,
    },
    cap,
  )) {
    if (item.sk === headerSk) header = item;
    else if (item.sk.startsWith(partsPrefix)) parts.push(item);
  }
  return header ? assemble(header, parts) : null;
}

export class TaskQueries {
  private readonly table: TableReader;
  private readonly now: () => number;
  /** Days a quarantined callback is kept: a listing never looks further back. */
  private readonly retentionDays: number;

  constructor(table: TableReader, now: () => number, retentionDays = DEFAULT_RAW_EVENT_TTL_DAYS) {
    this.table = table;
    this.now = now;
    this.retentionDays = retentionDays;
  }

  /**
   * The header of the task with this id: of the given appKey, or of the only appKey that has one (an id
   * that two appKeys share needs the appKey: AmbiguousTaskError names them).
   */
  async findHeader(id: string, appKey?: string, cap: Capacity = noCapacity()): Promise<Item | null> {
    if (appKey !== undefined) return this.table.get({ pk: Keys.taskPk(id), sk: Keys.headerSk(appKey) }, cap, false);
    const headers: Item[] = [];
    for await (const item of this.table.queryAll(
      {
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
        ExpressionAttributeValues: { ':pk': { S: Keys.taskPk(id) }, ':p': { S: Keys.headerPrefix } },
      },
      cap,
    )) {
      headers.push(item);
    }
    if (headers.length > 1) throw new AmbiguousTaskError(id, headers.map(appKeyOf).sort());
    return headers[0] ?? null;
  }

  /**
   * One page of a task's files in file-name order, after `after` (null: from the first), their attempts
   * counted: at most `limit` of them, and whether more follow. One Query of the files, however many the
   * task has, and one of the keys of each file that spilled.
   */
  async filesPage(
    header: Item,
    after: string | null,
    limit: number,
    cap: Capacity = noCapacity(),
  ): Promise<{ files: FileRecord[]; more: boolean }> {
    const appKey = appKeyOf(header);
    const id = header.pk.slice(Keys.taskPk('').length);
    const from = Keys.fileSk(appKey, after ?? '');
    const want = limit + 1;
    const items: Item[] = [];
    for await (const item of this.table.queryAll(
      {
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :last',
        ExpressionAttributeValues: {
          ':pk': { S: header.pk },
          ':from': { S: from },
          // Every file's sort key goes on with its name after the prefix: below the last code point.
          ':last': { S: Keys.fileSk(appKey, '\u{10FFFF}') },
        },
        ...(Number.isFinite(want) ? { Limit: Math.min(want + 1, 1000) } : {}),
        ConsistentRead: false,
      },
      cap,
    )) {
      if (after !== null && item.sk === from) continue;
      items.push(item);
      if (items.length >= want) break;
    }
    const page = items.slice(0, limit);
    const files = await filesWithAttempts(this.table, appKey, id, page, cap);
    return { files, more: items.length > page.length };
  }

  /**
   * A task's header with its files and recorded keys, added up from every item (read eventually consistent: values
   * only grow): what the checks of a header's counts compare them with.
   */
  async assembled(header: Item): Promise<AssembledTask> {
    const parts: Item[] = [];
    for await (const item of this.table.queryAll({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
      ExpressionAttributeValues: {
        ':pk': { S: header.pk },
        ':p': { S: Keys.partsPrefix(appKeyOf(header)) },
      },
      ConsistentRead: false,
    })) {
      parts.push(item);
    }
    return assemble(header, parts);
  }

  /**
   * Quarantined callbacks, newest first (or oldest first): of one task through the index, else day partition
   * by day.
   */
  async *listQuarantine(query: QuarantineQuery = {}): AsyncIterable<QuarantineEntry> {
    const walk = this.quarantineWalk(query);
    if (query.taskId !== undefined) yield* this.quarantineOfTask(walk, query.taskId);
    else yield* this.quarantineByDay(walk);
  }

  /** A listing of the quarantine as the query asks it: its window, its order, its filters and its limit. */
  private quarantineWalk(query: QuarantineQuery): QuarantineWalk {
    const until = query.until ?? this.now();
    const since = query.since ?? this.now() - (query.sinceDays ?? 7) * 86400_000;
    const matches = (e: QuarantineEntry) =>
      e.receivedAt >= since &&
      e.receivedAt <= until &&
      (query.reason === undefined || e.reason === query.reason) &&
      (query.appKey === undefined || e.appKey === query.appKey) &&
      (query.taskId === undefined || e.taskId === query.taskId);
    return { limit: query.limit ?? Infinity, forward: query.oldestFirst === true, since, until, matches, emitted: 0 };
  }

  /** The task's entries through the index (keys only), in the order asked, then the entries by key. */
  private async *quarantineOfTask(walk: QuarantineWalk, taskId: string): AsyncIterable<QuarantineEntry> {
    let keys: Key[] = [];
    const flush = async () => {
      const items = await this.table.getMany(keys, noCapacity());
      keys = [];
      return items.filter((i): i is Item => i !== null).map(quarantineFromItem);
    };
    for await (const item of this.table.queryAll({
      IndexName: Index.bySession.name,
      KeyConditionExpression: `${Index.bySession.pk} = :v AND ${SORT_AT} BETWEEN :a AND :b`,
      ExpressionAttributeValues: {
        ':v': { S: Keys.quarantineTaskGsi(taskId) },
        ':a': { N: String(walk.since) },
        ':b': { N: String(walk.until) },
      },
      ScanIndexForward: walk.forward,
    })) {
      keys.push({ pk: item.pk, sk: item.sk });
      if (keys.length === 50) {
        yield* emitMatching(walk, await flush());
        if (walk.emitted >= walk.limit) return;
      }
    }
    if (keys.length > 0) yield* emitMatching(walk, await flush());
  }

  /**
   * One partition per day, in the order asked; the other filters are applied to what each day holds. An entry is
   * kept for the retention from its write, which comes at most SQS's longest retention (14 days) after its receipt:
   * the walk never looks further back than that before `until`, whatever `since` is given.
   */
  private async *quarantineByDay(walk: QuarantineWalk): AsyncIterable<QuarantineEntry> {
    const { since, until } = walk;
    const oldest = until - (this.retentionDays + 14) * 86400_000;
    const days: number[] = [];
    for (let t = until; dayOf(t) >= dayOf(Math.max(since, oldest)); t -= 86400_000) days.push(t);
    if (walk.forward) days.reverse();
    for (const t of days) {
      for await (const item of this.table.queryAll({
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :a AND :b',
        ExpressionAttributeValues: {
          ':pk': { S: Keys.quarantinePk(dayOf(t)) },
          ':a': { S: Keys.quarantineSk(since, '') },
          ':b': { S: Keys.quarantineSk(until, '\uffff') },
        },
        ScanIndexForward: walk.forward,
      })) {
        yield* emitMatching(walk, [quarantineFromItem(item)]);
        if (walk.emitted >= walk.limit) return;
      }
    }
  }

  /** How many quarantined callbacks name this task (any age the table still holds). */
  async countQuarantined(taskId: string): Promise<number> {
    let count = 0;
    let start: Record<string, AttributeValue> | undefined;
    do {
      const res = await this.table.client.send(
        new QueryCommand({
          TableName: this.table.table,
          IndexName: Index.bySession.name,
          KeyConditionExpression: `${Index.bySession.pk} = :v`,
          ExpressionAttributeValues: { ':v': { S: Keys.quarantineTaskGsi(taskId) } },
          Select: 'COUNT',
          ExclusiveStartKey: start,
        }),
      );
      count += res.Count ?? 0;
      start = res.LastEvaluatedKey;
    } while (start);
    return count;
  }
}

function quarantineFromItem(item: Item): QuarantineEntry {
  const { pk: _pk, sk: _sk, kind: _kind, expiresAt: _e, [Index.bySession.pk]: _g, [SORT_AT]: _s, ...entry } = item;
  return {
    ...entry,
    taskId: entry.taskId ?? null,
    appKey: entry.appKey ?? null,
    sourceIp: entry.sourceIp ?? null,
    userAgent: entry.userAgent ?? null,
  } as QuarantineEntry;
}

/** A listing of the quarantine under way: what it asks, and how many entries it has given out of its limit. */
interface QuarantineWalk {
  limit: number;
  /** Oldest first. */
  forward: boolean;
  since: number;
  until: number;
  matches: (e: QuarantineEntry) => boolean;
  emitted: number;
}

/** The entries the listing's filters keep, until its limit. */
function* emitMatching(walk: QuarantineWalk, entries: Iterable<QuarantineEntry>): Generator<QuarantineEntry> {
  for (const entry of entries) {
    if (!walk.matches(entry)) continue;
    yield entry;
    if (++walk.emitted >= walk.limit) return;
  }
}
