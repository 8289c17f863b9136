// Streams of index partitions, each read newest first a page of keys at a time from a position, within a
// request budget, and merged into one newest-first sequence (listing.ts plans which partitions a listing
// reads and turns the keys into tasks).
import { QueryCommand, type QueryCommandInput } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { Position, ResolvedQuery } from '../table/cursors.ts';
import { fromItem, type TableReader } from '../table/table-client.ts';
import { SORT_AT } from '../table/table.ts';

/** A stream of index partitions read newest first, one after the other. */
export interface StreamPlan {
  index: string;
  pkAttr: string;
  partitions: number;
  partition(i: number): string;
}

export interface IndexEntry {
  stream: number;
  partition: number;
  pk: string;
  sk: string;
  sortAt: number;
}

/** Reads one stream of partitions in pages of index keys, from a position, within the request budget. */
export class StreamReader {
  private buffer: Omit<IndexEntry, 'stream'>[] = [];
  private partition: number;
  private last: { s: number; k: string; h: string } | undefined;
  /** The current partition has no key after the buffered ones. */
  private partitionDone = false;
  private exhausted: boolean;
  /** Out of query budget with nothing buffered: the stream's next key is unknown. */
  blocked = false;

  private readonly table: TableReader;
  private readonly plan: StreamPlan;
  private readonly q: ResolvedQuery;
  private readonly budget: { queries: number };

  constructor(table: TableReader, plan: StreamPlan, q: ResolvedQuery, start: Position, budget: { queries: number }) {
    this.table = table;
    this.plan = plan;
    this.q = q;
    this.budget = budget;
    this.exhausted = start === null || start.i >= plan.partitions;
    this.partition = start?.i ?? 0;
    this.last =
      start?.s !== undefined && start.k !== undefined && start.h !== undefined
        ? { s: start.s, k: start.k, h: start.h }
        : undefined;
  }

  /** The next key without taking it; null when the stream is exhausted or blocked. */
  async head(): Promise<Omit<IndexEntry, 'stream'> | null> {
    while (this.buffer.length === 0 && !this.exhausted) {
      if (this.partitionDone) {
        this.advance();
        continue;
      }
      if (this.budget.queries <= 0) {
        this.blocked = true;
        return null;
      }
      this.budget.queries -= 1;
      await this.fetch();
    }
    return this.buffer[0] ?? null;
  }

  take(): Omit<IndexEntry, 'stream'> {
    const entry = this.buffer.shift()!;
    this.last = { s: entry.sortAt, k: entry.pk, h: entry.sk };
    return entry;
  }

  /** Where the next page starts: after the last key taken (partitions known to be finished skipped). */
  position(): Position {
    let partition = this.partition;
    let last = this.last;
    if (!this.exhausted && this.buffer.length === 0 && this.partitionDone) {
      partition += 1;
      last = undefined;
    }
    if (this.exhausted || partition >= this.plan.partitions) return null;
    return last ? { i: partition, s: last.s, k: last.k, h: last.h } : { i: partition };
  }

  private advance(): void {
    this.partition += 1;
    this.last = undefined;
    this.partitionDone = false;
    if (this.partition >= this.plan.partitions) this.exhausted = true;
  }

  private async fetch(): Promise<void> {
    const value = this.plan.partition(this.partition);
    const input: QueryCommandInput = {
      TableName: this.table.table,
      IndexName: this.plan.index,
      KeyConditionExpression: `${this.plan.pkAttr} = :v AND ${SORT_AT} BETWEEN :a AND :b`,
      ExpressionAttributeValues: {
        ':v': { S: value },
        ':a': { N: String(this.q.from) },
        ':b': { N: String(this.q.to) },
      },
      ScanIndexForward: false,
      Limit: 100,
    };
    if (this.last) {
      // An index's start key is the index key and the table key of the last entry read.
      const key = { pk: this.last.k, sk: this.last.h };
      input.ExclusiveStartKey = marshall({ ...key, [this.plan.pkAttr]: value, [SORT_AT]: this.last.s });
    }
    const res = await this.table.client.send(new QueryCommand(input));
    this.buffer = (res.Items ?? []).map((raw) => {
      const item = fromItem(raw);
      return {
        partition: this.partition,
        pk: item.pk as string,
        sk: item.sk as string,
        sortAt: item[SORT_AT] as number,
      };
    });
    this.partitionDone = res.LastEvaluatedKey === undefined;
    if (this.buffer.length > 0) this.blocked = false;
  }
}

/** Merges streams that are each newest first into one newest-first sequence of keys. */
export class NewestFirst {
  private readonly streams: StreamReader[];

  constructor(streams: StreamReader[]) {
    this.streams = streams;
  }

  /** The next key of the merge, or null when every stream is exhausted or one is blocked. */
  async peek(): Promise<IndexEntry | null> {
    let best: IndexEntry | null = null;
    for (let i = 0; i < this.streams.length; i++) {
      const head = await this.streams[i]!.head();
      if (this.streams[i]!.blocked) return null;
      // Ties go to the lower stream index, so that every page merges in the same order.
      if (head && (best === null || head.sortAt > best.sortAt)) best = { ...head, stream: i };
    }
    return best;
  }

  async take(n: number): Promise<IndexEntry[]> {
    const taken: IndexEntry[] = [];
    while (taken.length < n) {
      const next = await this.peek();
      if (!next) break;
      this.streams[next.stream]!.take();
      taken.push(next);
    }
    return taken;
  }

  blocked(): boolean {
    return this.streams.some((s) => s.blocked);
  }
}
