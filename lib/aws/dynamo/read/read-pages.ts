// Paginated reads of the task table behind the read API and the CLI: a task with one page of its files,
// one page of a task's stored callbacks, one page of a listing of tasks (listing.ts). Each page is bounded
// in items and in bytes, so that no answer of the read API can outgrow a Lambda response; cursors are
// opaque (../table/cursors.ts). A task's status and counts are its header's; its files and its raw callbacks are
// read a page at a time (docs/task-store.md, Reads).
import { Buffer } from 'node:buffer';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type {
  EventsPage,
  Page,
  PageRequest,
  StoredEvent,
  TaskPage,
  TaskQuery,
  TaskReader,
  TaskRef,
} from '../../../domain/task-store.ts';
import type { TaskSummary } from '../../../domain/task-summary.ts';
import type { FileView } from '../../../domain/task.ts';
import { decodeCursor, encodeCursor, EventsCursor, FilesCursor } from '../table/cursors.ts';
import { toTask } from '../../../domain/task-parts.ts';
import { appKeyOf, eventFromItem, headerFromItem, headerParts } from '../table/items.ts';
import { DEFAULT_READ_BUDGET, listTasksPage, type ReadBudget } from './listing.ts';
import { isByTimeCursor, listByTimePage } from './listing-by-time.ts';
import { TaskQueries } from './queries.ts';
import { TableReader, type Item } from '../table/table-client.ts';
import { EventsIndex, Keys } from '../table/table.ts';
import { withVerifications } from '../storage/verifications.ts';

export type { ReadBudget } from './listing.ts';

export interface DynamoTaskReaderOptions {
  client: DynamoDBClient;
  tableName: string;
  /** Clock, for tests. */
  now?: () => number;
  budget?: Partial<ReadBudget> | undefined;
  /**
   * Each file of a page with its verification (docs/contract.md §4, the file's `verification`): the task JSON of
   * the read API and the CLI. One Query of the page's checks more; left out, the files are as the worker keeps them.
   */
  verifications?: boolean | undefined;
}

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

export class DynamoTaskReader implements TaskReader {
  private readonly table: TableReader;
  private readonly tasks: TaskQueries;
  private readonly now: () => number;
  private readonly budget: ReadBudget;
  private readonly verifications: boolean;

  constructor(opts: DynamoTaskReaderOptions) {
    this.verifications = opts.verifications ?? false;
    this.table = new TableReader(opts.client, opts.tableName);
    this.now = opts.now ?? Date.now;
    this.tasks = new TaskQueries(this.table, this.now);
    this.budget = { ...DEFAULT_READ_BUDGET, ...opts.budget };
  }

  async getTaskPage(ref: TaskRef, page: PageRequest): Promise<TaskPage | null> {
    const after = page.cursor === undefined ? null : decodeCursor(page.cursor, FilesCursor).f;
    const header = await this.tasks.findHeader(ref.id, ref.appKey);
    if (!header) return null;
    const counted = headerParts(header);
    // The header says the task; the files are read a page at a time, the page bounded by bytes too.
    if (counted.eventCount === 0) return null;
    const { files: records, more } = await this.tasks.filesPage(header, after, page.limit);
    const task = toTask({ ...counted, files: records });
    // Each file with its verification, counted in the page's bytes.
    const checked = await this.checked(task.appKey, task.id, task.files);
    const files = pageOf(checked, page, (f: FileView) => jsonBytes(f));
    const last = files.items.at(-1);
    return {
      task: { ...task, files: files.items },
      nextFilesCursor: (files.more || more) && last ? encodeCursor({ f: last.fileName } satisfies FilesCursor) : null,
    };
  }

  /** A page's files, each with its verification when the reader gives them. */
  private checked(appKey: string, id: string, files: FileView[]): Promise<FileView[]> {
    return this.verifications ? withVerifications(this.table, appKey, id, files) : Promise.resolve(files);
  }

  async listEventsPage(ref: TaskRef, page: PageRequest): Promise<EventsPage | null> {
    const after = page.cursor === undefined ? null : decodeCursor(page.cursor, EventsCursor).e;
    const header = await this.tasks.findHeader(ref.id, ref.appKey);
    if (!header) return null;
    const { service, identAt } = headerFromItem(header);
    const task = { service, appKey: appKeyOf(header), id: ref.id, firstAt: identAt };
    return { ...(await this.indexedEventsPage(header, after, page)), task };
  }

  /**
   * A page of a task's raw callbacks from the byTaskTime index, whatever the task's size: one Query of the
   * page's deliveries (and one more item, which says whether a page follows). A callback delivered twice
   * (two signatures) has two deliveries at one rank: it is listed once.
   */
  private async indexedEventsPage(header: Item, after: string | null, page: PageRequest): Promise<Page<StoredEvent>> {
    const appKey = appKeyOf(header);
    const id = header.pk.slice(Keys.taskPk('').length);
    const maxBytes = page.maxBytes ?? Number.POSITIVE_INFINITY;
    const limit = Math.min(page.limit, this.budget.eventKeysPerPage);
    const items: StoredEvent[] = [];
    let bytes = 0;
    let last: string | null = after;
    let more = false;
    for await (const item of this.table.queryAll({
      IndexName: EventsIndex.name,
      KeyConditionExpression: `${EventsIndex.pk} = :pk${after === null ? '' : ` AND ${EventsIndex.sk} > :after`}`,
      ExpressionAttributeValues: {
        ':pk': { S: Keys.eventsGsi(appKey, id) },
        ...(after === null ? {} : { ':after': { S: after } }),
      },
      Limit: limit + 1,
    })) {
      const rank: string = item[EventsIndex.sk];
      if (rank === last) continue;
      if (items.length >= limit || bytes >= maxBytes) {
        more = true;
        break;
      }
      const event = eventFromItem(item);
      items.push(event);
      bytes += jsonBytes(event);
      last = rank;
    }
    return { items, next: more && last !== null ? encodeCursor({ e: last } satisfies EventsCursor) : null };
  }

  listTasksPage(query: TaskQuery, page: PageRequest): Promise<Page<TaskSummary>> {
    const ctx = { table: this.table, tasks: this.tasks, now: this.now(), budget: this.budget };
    // By time of change or of end: through the hour buckets (listing-by-time.ts), not an index.
    if (query.updatedSince !== undefined || query.endedSince !== undefined || isByTimeCursor(page.cursor))
      return listByTimePage(ctx, query, page);
    return listTasksPage(ctx, query, page);
  }
}

/** At most `page.limit` items, and no more once their size reaches `page.maxBytes` (always at least one). */
function pageOf<T>(all: readonly T[], page: PageRequest, size: (item: T) => number): { items: T[]; more: boolean } {
  const maxBytes = page.maxBytes ?? Number.POSITIVE_INFINITY;
  const items: T[] = [];
  let bytes = 0;
  for (const item of all) {
    if (items.length >= page.limit) return { items, more: true };
    items.push(item);
    bytes += size(item);
    if (bytes >= maxBytes) return { items, more: items.length < all.length };
  }
  return { items, more: false };
}
