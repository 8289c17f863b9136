// Paginated reads of the task table behind the read API and the CLI: a task with one page of its files,
// one page of a task's stored callbacks, one page of a listing of tasks (listing.ts). Each page is bounded
// in items and in bytes, so that no answer of the read API can outgrow a Lambda response; cursors are
// opaque (cursors.ts).
import { Buffer } from 'node:buffer';
import { GetItemCommand, QueryCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { toFileView, toTask } from '../../domain/task.ts';
import type {
  Page,
  PageRequest,
  StoredEvent,
  TaskPage,
  TaskQuery,
  TaskReader,
  TaskRef,
  TaskSummary,
} from '../../domain/task-store.ts';
import { decodeCursor, encodeCursor, EventsCursor, FilesCursor } from './cursors.ts';
import { eventFromItem, fileFromItem, fromItem, headerFromItem, type Item } from './items.ts';
import { DEFAULT_READ_BUDGET, listTasksPage, type ReadBudget } from './listing.ts';
import { Keys } from './table.ts';

export { DEFAULT_LISTING_DAYS, DEFAULT_READ_BUDGET, type ReadBudget } from './listing.ts';

export interface DynamoTaskReaderOptions {
  client: DynamoDBClient;
  tableName: string;
  /** Clock, for tests. */
  now?: () => number;
  budget?: Partial<ReadBudget>;
}

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

export class DynamoTaskReader implements TaskReader {
  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly now: () => number;
  private readonly budget: ReadBudget;

  constructor(opts: DynamoTaskReaderOptions) {
    this.client = opts.client;
    this.table = opts.tableName;
    this.now = opts.now ?? Date.now;
    this.budget = { ...DEFAULT_READ_BUDGET, ...opts.budget };
  }

  async getTaskPage(ref: TaskRef, page: PageRequest): Promise<TaskPage | null> {
    const after = page.cursor === undefined ? null : decodeCursor(page.cursor, FilesCursor).f;
    const pk = Keys.taskPk(ref.id);
    const [header, files] = await Promise.all([
      this.header(pk),
      this.partitionPage(pk, Keys.filePrefix, after, page, (item) => fileFromItem(item), toFileView),
    ]);
    if (!header || (ref.appKey !== undefined && header.appKey !== ref.appKey)) return null;
    const last = files.items.at(-1);
    return {
      task: toTask(headerFromItem(header), files.items),
      nextFilesCursor: files.more && last ? encodeCursor({ f: last.fileName } satisfies FilesCursor) : null,
    };
  }

  async listEventsPage(ref: TaskRef, page: PageRequest): Promise<Page<StoredEvent> | null> {
    const after = page.cursor === undefined ? null : decodeCursor(page.cursor, EventsCursor).e;
    const pk = Keys.taskPk(ref.id);
    const [header, events] = await Promise.all([
      this.header(pk),
      this.partitionPage(
        pk,
        Keys.eventPrefix,
        after,
        page,
        (item) => ({ rank: sortKeySuffix(item, Keys.eventPrefix), event: eventFromItem(item) }),
        (e) => e.event,
      ),
    ]);
    if (!header || (ref.appKey !== undefined && header.appKey !== ref.appKey)) return null;
    const last = events.items.at(-1);
    return {
      items: events.items.map((e) => e.event),
      next: events.more && last ? encodeCursor({ e: last.rank } satisfies EventsCursor) : null,
    };
  }

  listTasksPage(query: TaskQuery, page: PageRequest): Promise<Page<TaskSummary>> {
    return listTasksPage({ client: this.client, table: this.table, now: this.now(), budget: this.budget }, query, page);
  }

  // -------------------------------------------------------------------------------------------------

  private async header(pk: string): Promise<Item | null> {
    const res = await this.client.send(
      new GetItemCommand({ TableName: this.table, Key: marshall({ pk, sk: Keys.headerSk }), ConsistentRead: true }),
    );
    return res.Item ? fromItem(res.Item) : null;
  }

  /**
   * Items of one task partition whose sort key starts with `prefix`, in sort-key order, after the one
   * whose sort key is `prefix + after`: at most `page.limit`, and no more once their JSON (as `view`
   * gives it) reaches `page.maxBytes`. One item more than the limit is read to know whether any follows.
   */
  private async partitionPage<T>(
    pk: string,
    prefix: string,
    after: string | null,
    page: PageRequest,
    map: (item: Item) => T,
    view: (value: T) => unknown,
  ): Promise<{ items: T[]; more: boolean }> {
    const maxBytes = page.maxBytes ?? Number.POSITIVE_INFINITY;
    const items: T[] = [];
    let bytes = 0;
    let start: Record<string, AttributeValue> | undefined =
      after === null ? undefined : marshall({ pk, sk: prefix + after });
    do {
      const wanted = page.limit - items.length + 1;
      const res = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
          ExpressionAttributeValues: { ':pk': { S: pk }, ':p': { S: prefix } },
          ExclusiveStartKey: start,
          ...(Number.isFinite(wanted) ? { Limit: wanted } : {}),
        }),
      );
      const found = res.Items ?? [];
      for (let j = 0; j < found.length; j++) {
        if (items.length >= page.limit) return { items, more: true };
        const value = map(fromItem(found[j]!));
        items.push(value);
        bytes += jsonBytes(view(value));
        if (bytes >= maxBytes) return { items, more: j < found.length - 1 || res.LastEvaluatedKey !== undefined };
      }
      start = res.LastEvaluatedKey;
    } while (start && items.length <= page.limit);
    return { items, more: false };
  }
}

function sortKeySuffix(item: Item, prefix: string): string {
  return String(item.sk).slice(prefix.length);
}
