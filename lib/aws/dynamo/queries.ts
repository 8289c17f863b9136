// Reads of one task's items, and of the quarantine. A task is found by id (its appKey said, or the only
// appKey that has one) and added up from its items: counts, status, updatedAt and lastError are computed
// on read (./items.ts). The paginated reads and listings build on these (./read-pages.ts).
import { AmbiguousTaskError, type Capacity, type QuarantineEntry } from '../../domain/task-store.ts';
import { appKeyOf, assemble, type AssembledTask } from './items.ts';
import { noCapacity, type Item, type TableReader } from './table-client.ts';
import { Keys, dayOf } from './table.ts';

export class TaskQueries {
  private readonly table: TableReader;
  private readonly now: () => number;

  constructor(table: TableReader, now: () => number) {
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

  /** The task read strongly consistent, as it stands right after a write. */
  async readAfterWrite(appKey: string, id: string, cap: Capacity = noCapacity()): Promise<AssembledTask | null> {
    const header = await this.table.get({ pk: Keys.taskPk(id), sk: Keys.headerSk(appKey) }, cap);
    return header ? this.assembled(header, true, cap) : null;
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
}
