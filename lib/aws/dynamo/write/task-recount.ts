// A task counted again from its items (docs/task-store.md, Counts in the header): every file's state and every
// recorded key, except what the marks of writers the header has not absorbed leave for their batch to charge; its
// tally, its lost files, and the time it completed when its header keeps none. Read a page at a time and folded as
// the items come, so that a recount holds a page of the task, never the whole of it: a task of 100,000 images is
// about 10,000 read units of items, hundreds of megabytes as objects. The header comes first (`H#` sorts before
// `P#`): what it absorbed is known before any mark is read.
import { NONE_ABSORBED, addCounts, changeOf, zeroCounts, type TaskCounts } from '../../../domain/task-counts.ts';
import { CompletionSweep, type CompletionPass } from '../../../domain/completion-time.ts';
import { toSummary } from '../../../domain/task-parts.ts';
import type { Capacity } from '../../../domain/task-store.ts';
import { fileState, joinTallies, type Tally } from '../../../domain/task.ts';
import { appKeyOf, fileFromItem, headerFromItem, keysOf, markOf, tallyOf } from '../table/items.ts';
import type { Item, TableReader } from '../table/table-client.ts';
import { Keys } from '../table/table.ts';
import type { QueryCommandInput } from '@aws-sdk/client-dynamodb';

/** Items a recount reads at a time: what it holds at once, whatever the task's size. */
export const RECOUNT_PAGE_ITEMS = 500;

/** What a recount writes into a task's header. */
export interface Recount {
  /** The header as read. */
  header: Item;
  /** The sequence number the header is to count as absorbed: its own, or a message given up after it. */
  absorbed: string;
  counts: TaskCounts;
  tally: Tally;
  /** Failed files marked lost. */
  lost: number;
  /** When the task first completed: the header's, or off the files as they stand; null while it is not completed. */
  done: number | null;
}

/**
 * The fold of one task's items: its header, then its other items (files, keys recorded on their own) in any
 * order, each once. Pure: it holds counts, and at most twice `keep` spans of the completion.
 */
export class RecountFold {
  private readonly header: Item;
  readonly absorbed: string;
  private readonly recordedPrefix: string;
  /** As the header is to count them: the marks of writers not absorbed yet leave their part to their batch. */
  private counts: TaskCounts;
  /** The files as they stand (no marks): the task's status, and so its completion, are read off them. */
  private standing: TaskCounts;
  private tally: Tally;
  private lost = 0;
  private readonly completion: CompletionSweep | null;

  constructor(header: Item, through: string | null, keep: number = Number.POSITIVE_INFINITY) {
    this.header = header;
    const stored: string = header.seq ?? NONE_ABSORBED;
    this.absorbed = through !== null && through > stored ? through : stored;
    const appKey = appKeyOf(header);
    this.recordedPrefix = `${Keys.partsPrefix(appKey)}K#`;
    const keys = Object.keys(keysOf(header)).length;
    this.counts = { ...zeroCounts(), events: keys };
    this.standing = { ...zeroCounts(), events: keys };
    this.tally = tallyOf(header);
    const h = headerFromItem(header);
    // Kept by the header once it completed: no file needs sweeping then.
    this.completion = (header.doneAt ?? null) === null ? new CompletionSweep(h.endedAt ?? h.identAt, { keep }) : null;
  }

  add(item: Item): void {
    const sk: string = item.sk;
    if (sk.startsWith(this.recordedPrefix)) this.record(changeOf(null, null, 1));
    else {
      const file = fileFromItem(item);
      const state = fileState(file);
      this.record(changeOf(null, state, Object.keys(keysOf(item)).length));
      this.tally = joinTallies(this.tally, tallyOf(item));
      if (file.lostAt !== undefined && state === 'failed') this.lost += 1;
      this.completion?.add(file);
    }
    const mark = markOf(item);
    if (mark && mark.seq > this.absorbed) {
      // A file item: the batch of its last writer charges what its mark says the header does not count.
      this.counts = addCounts(this.counts, changeOf(fileState(fileFromItem(item)), mark.counted, -mark.events));
    } else if (typeof item.q === 'string' && item.q > this.absorbed) {
      // A key recorded on an item of its own by a writer not absorbed yet.
      this.counts.events -= 1;
    }
  }

  /**
   * The recount once every item is in; `completion`, when the task is completed and its header keeps no time: the
   * time, or where another pass over its files starts (more spans lay ahead than the fold kept).
   */
  result(): { recount: Omit<Recount, 'done'>; done: number | null; completion: CompletionPass | null } {
    const recount = {
      header: this.header,
      absorbed: this.absorbed,
      counts: zeroSafe(this.counts),
      tally: this.tally,
      lost: this.lost,
    };
    if (!this.completion) return { recount, done: this.header.doneAt, completion: null };
    const parts = { header: headerFromItem(this.header), files: [], tally: this.tally, eventCount: 0 };
    const completed = toSummary({ ...parts, counts: this.standing }).status === 'completed';
    return { recount, done: null, completion: completed ? this.completion.moment() : null };
  }

  private record(change: TaskCounts): void {
    this.counts = addCounts(this.counts, change);
    this.standing = addCounts(this.standing, change);
  }
}

/** The Query of a task's header and its other items, in key order (the header first), strongly consistent. */
export function taskItemsQuery(appKey: string, id: string): Omit<QueryCommandInput, 'TableName'> {
  return {
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :h AND :last',
    ExpressionAttributeValues: {
      ':pk': { S: Keys.taskPk(id) },
      ':h': { S: Keys.headerSk(appKey) },
      ':last': { S: `${Keys.partsPrefix(appKey)}\u{10FFFF}` },
    },
    ConsistentRead: true,
  };
}

/**
 * A task recounted from its items, read strongly consistent `pageItems` at a time (null: no such task). A task
 * completed without a time in its header has its files read again, a pass after the first, only when more of them
 * were named before their upload than a page holds, all after its end.
 */
export async function recountTask(
  table: TableReader,
  task: { appKey: string; id: string; through: string | null },
  cap: Capacity,
  pageItems = RECOUNT_PAGE_ITEMS,
): Promise<Recount | null> {
  const { appKey, id, through } = task;
  const headerSk = Keys.headerSk(appKey);
  const prefix = Keys.partsPrefix(appKey);
  let fold: RecountFold | null = null;
  for await (const item of table.queryAll({ ...taskItemsQuery(appKey, id), Limit: pageItems }, cap)) {
    if (item.sk === headerSk) fold = new RecountFold(item, through, pageItems);
    else if (item.sk.startsWith(prefix)) fold?.add(item);
  }
  if (!fold) return null;
  const { recount, done, completion } = fold.result();
  let pass = completion;
  while (pass !== null && 'from' in pass) {
    const h = headerFromItem(recount.header);
    const sweep = new CompletionSweep(h.endedAt ?? h.identAt, { from: pass.from, keep: pageItems });
    for await (const item of table.queryAll(
      {
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :files)',
        ExpressionAttributeValues: { ':pk': { S: Keys.taskPk(id) }, ':files': { S: Keys.fileSk(appKey, '') } },
        ConsistentRead: true,
        Limit: pageItems,
      },
      cap,
    ))
      sweep.add(fileFromItem(item));
    pass = sweep.moment();
  }
  return { ...recount, done: pass === null ? done : pass.at };
}

/** Keeps a recount from writing a negative count should items disagree with their marks. */
function zeroSafe(c: TaskCounts): TaskCounts {
  return {
    files: Math.max(0, c.files),
    pending: Math.max(0, c.pending),
    uploaded: Math.max(0, c.uploaded),
    failed: Math.max(0, c.failed),
    events: Math.max(0, c.events),
  };
}
