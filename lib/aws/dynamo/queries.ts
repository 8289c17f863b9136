// The task store's reads: a task by id, its raw callbacks, listings through the indexes, the quarantine.
import { batched, mergeNewestFirst } from '../../async-streams.ts';
import type { QuarantineEntry, StoredEvent, TaskQuery, TaskSummary } from '../../domain/task-store.ts';
import { toTask, type FileRecord, type Task, type TaskStatus } from '../../domain/task.ts';
import { fileFromItem, headerFromItem, summaryFromItem } from './items.ts';
import { noCapacity, type Key, type TableClient } from './table-client.ts';
import { Index, Keys, SORT_AT, dayOf } from './table.ts';

const ALL_STATUSES: TaskStatus[] = ['recording', 'capturing', 'ended', 'completed', 'upload_failed', 'failed'];

export class TaskQueries {
  private readonly table: TableClient;
  private readonly now: () => number;

  constructor(table: TableClient, now: () => number) {
    this.table = table;
    this.now = now;
  }

  async getTask(id: string): Promise<Task | null> {
    const header = await this.table.get({ pk: Keys.taskPk(id), sk: Keys.headerSk }, noCapacity());
    if (!header) return null;
    const files: FileRecord[] = [];
    for await (const item of this.table.queryAll({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
      ExpressionAttributeValues: { ':pk': { S: Keys.taskPk(id) }, ':p': { S: Keys.filePrefix } },
    })) {
      files.push(fileFromItem(item));
    }
    return toTask(headerFromItem(header), files);
  }

  async listEvents(id: string): Promise<StoredEvent[]> {
    const events: StoredEvent[] = [];
    for await (const item of this.table.queryAll({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
      ExpressionAttributeValues: { ':pk': { S: Keys.taskPk(id) }, ':p': { S: Keys.eventPrefix } },
    })) {
      events.push({
        key: item.key,
        type: item.type,
        timestamp: item.timestamp,
        receivedAt: item.receivedAt,
        verdict: item.verdict,
        requestId: item.requestId ?? null,
        raw: item.raw,
        expiresAt: item.expiresAt ?? null,
      });
    }
    return events;
  }

  async *listTasks(query: TaskQuery): AsyncIterable<TaskSummary> {
    const limit = query.limit ?? Infinity;
    const until = query.until ?? this.now() + 366 * 86400_000;
    const since = query.since ?? 0;
    const streams: AsyncIterable<Key & { sortAt: number }>[] = [];
    const range = { since, until };
    if (query.sessionId)
      streams.push(this.indexKeys(Index.bySession.name, Index.bySession.pk, Keys.sessionGsi(query.sessionId), range));
    else if (query.roomId)
      streams.push(this.indexKeys(Index.byRoom.name, Index.byRoom.pk, Keys.roomGsi(query.roomId), range));
    else if (query.appKey) {
      for (const status of query.status ? [query.status] : ALL_STATUSES) {
        streams.push(
          this.indexKeys(Index.byAppStatus.name, Index.byAppStatus.pk, Keys.appStatusGsi(query.appKey, status), range),
        );
      }
    } else {
      streams.push(this.dayKeys(range, query.since === undefined ? 30 : undefined));
    }
    let emitted = 0;
    for await (const batch of batched(mergeNewestFirst(streams), 50)) {
      const items = await this.table.getMany(
        batch.map((k) => ({ pk: k.pk, sk: k.sk })),
        noCapacity(),
      );
      for (const item of items) {
        if (!item) continue;
        const summary = summaryFromItem(item);
        if (query.appKey && summary.appKey !== query.appKey) continue;
        if (query.status && summary.status !== query.status) continue;
        if (query.roomId && summary.roomId !== query.roomId) continue;
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
    index: string,
    pkAttr: string,
    value: string,
    range: { since: number; until: number },
  ): AsyncIterable<Key & { sortAt: number }> {
    for await (const item of this.table.queryAll({
      IndexName: index,
      KeyConditionExpression: `${pkAttr} = :v AND ${SORT_AT} BETWEEN :a AND :b`,
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
      yield* this.indexKeys(Index.byDay.name, Index.byDay.pk, Keys.dayGsi(day), range);
    }
  }
}
