// The task store's reads: a task by id, its raw callbacks, listings through the indexes, the quarantine.
// A task's counts, status, updatedAt and lastError are added up from its items on read (./items.ts).
import { batched } from '../../async-streams.ts';
import {
  AmbiguousTaskError,
  type Capacity,
  type QuarantineEntry,
  type StoredEvent,
  type TaskQuery,
  type TaskSummary,
} from '../../domain/task-store.ts';
import { rankOf, type Task } from '../../domain/task.ts';
import {
  appKeyOf,
  assemble,
  bodyKey,
  eventFromItem,
  summaryFromParts,
  taskFromParts,
  type AssembledTask,
} from './items.ts';
import { noCapacity, type Item, type Key, type TableClient } from './table-client.ts';
import { Index, Keys, SORT_AT, dayOf } from './table.ts';

/** Tasks whose items a listing reads at the same time. */
const LIST_CONCURRENCY = 8;

export class TaskQueries {
  private readonly table: TableClient;
  private readonly now: () => number;

  constructor(table: TableClient, now: () => number) {
    this.table = table;
    this.now = now;
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

  /** A task's header with its files and recorded keys, added up. */
  async assembled(header: Item, consistent = false, cap: Capacity = noCapacity()): Promise<AssembledTask> {
    const parts: Item[] = [];
    for await (const item of this.table.queryAll(
      {
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
        ExpressionAttributeValues: {
          ':pk': { S: header.pk },
          ':p': { S: Keys.partsPrefix(appKeyOf(header)) },
        },
        ConsistentRead: consistent,
      },
      cap,
    )) {
      parts.push(item);
    }
    return assemble(header, parts);
  }

  async getTask(id: string, appKey?: string): Promise<Task | null> {
    const header = await this.findHeader(id, appKey);
    return header ? taskFromParts(await this.assembled(header)) : null;
  }

  /** The task read strongly consistent, as it stands right after a write. */
  async readAfterWrite(appKey: string, id: string, cap: Capacity = noCapacity()): Promise<AssembledTask | null> {
    const header = await this.table.get({ pk: Keys.taskPk(id), sk: Keys.headerSk(appKey) }, cap);
    return header ? this.assembled(header, true, cap) : null;
  }

  /** The raw callbacks of a task, one per distinct callback, in timestamp order; expired ones are gone. */
  async listEvents(id: string, appKey?: string): Promise<StoredEvent[]> {
    const header = await this.findHeader(id, appKey);
    if (!header) return [];
    const { recorded } = await this.assembled(header);
    const items = await this.table.getMany(
      recorded.map((r) => bodyKey(appKeyOf(header), id, r.eventKey, r.ref)),
      noCapacity(),
      false,
    );
    const events = items.filter((item): item is Item => item !== null).map(eventFromItem);
    const rank = (e: StoredEvent) => rankOf(e.timestamp, e.key);
    return events.sort((a, b) => (rank(a) < rank(b) ? -1 : rank(a) > rank(b) ? 1 : 0));
  }

  async *listTasks(query: TaskQuery): AsyncIterable<TaskSummary> {
    const limit = query.limit ?? Infinity;
    const until = query.until ?? this.now() + 366 * 86400_000;
    const since = query.since ?? 0;
    const range = { since, until };
    let keys: AsyncIterable<Key & { sortAt: number }>;
    if (query.sessionId) keys = this.indexKeys(Index.bySession, Keys.sessionGsi(query.sessionId), range);
    else if (query.roomId) keys = this.indexKeys(Index.byRoom, Keys.roomGsi(query.roomId), range);
    else if (query.appKey) keys = this.indexKeys(Index.byApp, Keys.appGsi(query.appKey), range);
    else keys = this.dayKeys(range, query.since === undefined ? 30 : undefined);
    let emitted = 0;
    for await (const batch of batched(keys, 50)) {
      const headers = (await this.table.getMany(batch, noCapacity(), false)).filter(
        (h): h is Item =>
          h !== null &&
          (!query.appKey || appKeyOf(h) === query.appKey) &&
          (!query.roomId || h.roomId === query.roomId) &&
          (!query.sessionId || h.sessionId === query.sessionId),
      );
      const summaries: (TaskSummary | null)[] = new Array(headers.length).fill(null);
      let next = 0;
      const work = async () => {
        while (next < headers.length) {
          const i = next++;
          summaries[i] = summaryFromParts(await this.assembled(headers[i]!));
        }
      };
      await Promise.all(Array.from({ length: Math.min(LIST_CONCURRENCY, headers.length) }, work));
      for (const summary of summaries) {
        if (!summary || (query.status && summary.status !== query.status)) continue;
        yield summary;
        if (++emitted >= limit) return;
      }
    }
  }

  async *listQuarantine(opts: { sinceDays?: number; limit?: number } = {}): AsyncIterable<QuarantineEntry> {
    const days = opts.sinceDays ?? 7;
    const limit = opts.limit ?? Infinity;
    let emitted = 0;
    for (let i = 0; i < days; i++) {
      const day = dayOf(this.now() - i * 86400_000);
      for await (const item of this.table.queryAll({
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: Keys.quarantinePk(day) } },
        ScanIndexForward: false,
      })) {
        const { pk: _pk, sk: _sk, kind: _kind, expiresAt: _e, ...entry } = item;
        yield entry as QuarantineEntry;
        if (++emitted >= limit) return;
      }
    }
  }

  /** Task keys from one index partition, newest first, within the time range. */
  private async *indexKeys(
    index: { name: string; pk: string },
    value: string,
    range: { since: number; until: number },
  ): AsyncIterable<Key & { sortAt: number }> {
    for await (const item of this.table.queryAll({
      IndexName: index.name,
      KeyConditionExpression: `${index.pk} = :v AND ${SORT_AT} BETWEEN :a AND :b`,
      ExpressionAttributeValues: {
        ':v': { S: value },
        ':a': { N: String(range.since) },
        ':b': { N: String(range.until) },
      },
      ScanIndexForward: false,
    })) {
      yield { pk: item.pk, sk: item.sk, sortAt: item[SORT_AT] };
    }
  }

  /** Every task, newest first, one day partition at a time. */
  private async *dayKeys(
    range: { since: number; until: number },
    maxDays: number | undefined,
  ): AsyncIterable<Key & { sortAt: number }> {
    const lastDay = Math.min(range.until, this.now() + 86400_000);
    const firstDay = maxDays !== undefined ? Math.max(range.since, lastDay - maxDays * 86400_000) : range.since;
    for (let t = lastDay; t >= firstDay - 86400_000; t -= 86400_000) {
      const day = dayOf(t);
      if (day < dayOf(firstDay)) break;
      yield* this.indexKeys(Index.byDay, Keys.dayGsi(day), range);
    }
  }
}
