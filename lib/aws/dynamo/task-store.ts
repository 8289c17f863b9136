// The DynamoDB task store. A task is a partition `TASK#<id>` holding a header item, one item per file
// and one item per distinct callback (the ledger, with the raw body). Each item of state is a join of
// facts (lib/domain/task.ts), written with optimistic concurrency (read, join, put if the version is
// unchanged). Counts stay exact under redelivery and crashes because every item remembers, as a token,
// which callbacks it has absorbed until the callback's ledger entry exists; the ledger entry is written
// last, so its existence means the callback reached every item. Tokens of finished callbacks are pruned
// by later writes, so no item grows with the number of callbacks. See docs/design.md, "Table design" and after.
import {
  ConditionalCheckFailedException,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  type AttributeValue,
  type DynamoDBClient,
  type QueryCommandInput,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { Buffer } from 'node:buffer';
import type { Callback } from '../../domain/callback.ts';
import { ID_FIELD_OF } from '../../domain/services.ts';
import {
  applyToFile,
  applyToHeader,
  deriveStatus,
  fileNameOf,
  fileState,
  rankOf,
  sortTimeOf,
  TASK_STATUSES,
  toSummary,
  type FileRecord,
  type FileState,
  type FileTransition,
  type Task,
  type TaskHeader,
  type TaskStatus,
} from '../../domain/task.ts';
import type {
  ApplyResult,
  Capacity,
  DeliveredCallback,
  Page,
  PageRequest,
  QuarantineApplied,
  QuarantineEntry,
  QuarantineQuery,
  StoredEvent,
  TaskPage,
  StoredWrite,
  TaskQuery,
  TaskRef,
  TaskStore,
  TaskSummary,
} from '../../domain/task-store.ts';
import {
  ContentionError,
  addCapacity,
  backoff,
  batchGetItems,
  fileFromItem,
  headerFromItem,
  type Item,
  type Key,
  fromItem,
  toItem,
} from './items.ts';
import { DynamoTaskReader, type ReadBudget } from './read-pages.ts';
import type { SignatureVerdict } from '../../queue-message.ts';
import { DEFAULT_RAW_EVENT_TTL_DAYS, Index, Keys, SORT_AT, dayOf } from './table.ts';
import { UnstorableCallbackError } from '../../domain/task-store.ts';
import { errorSentence } from '../../text.ts';
import { unstorableNumberIn } from './numbers.ts';

export { ContentionError } from './items.ts';

export interface DynamoTaskStoreOptions {
  client: DynamoDBClient;
  tableName: string;
  /** Days a raw callback is kept before the TTL deletes it (default DEFAULT_RAW_EVENT_TTL_DAYS). */
  rawEventTtlDays?: number;
  /** Clock, for tests. */
  now?: () => number;
  /** Tokens an item may hold before a write checks which of them can go (default 4). */
  pruneThreshold?: number;
  /** Optimistic-concurrency attempts before giving up with a retryable error (default 16). */
  maxAttempts?: number;
  /** Requests a page of a listing may cost (read-pages.ts). */
  readBudget?: Partial<ReadBudget>;
}

/** A write whose condition fails is still billed (one unit for a small item); DynamoDB does not report it. */
const FAILED_CONDITION_WCU = 1;

export class DynamoTaskStore implements TaskStore {
  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly ttlDays: number;
  private readonly now: () => number;
  private readonly pruneThreshold: number;
  private readonly maxAttempts: number;
  private readonly reader: DynamoTaskReader;

  constructor(opts: DynamoTaskStoreOptions) {
    this.client = opts.client;
    this.table = opts.tableName;
    this.ttlDays = opts.rawEventTtlDays ?? DEFAULT_RAW_EVENT_TTL_DAYS;
    this.now = opts.now ?? Date.now;
    this.pruneThreshold = opts.pruneThreshold ?? 4;
    this.maxAttempts = opts.maxAttempts ?? 16;
    this.reader = new DynamoTaskReader({
      client: this.client,
      tableName: this.table,
      now: this.now,
      budget: opts.readBudget,
    });
  }

  // -------------------------------------------------------------------------------------------------
  // Writes

  async applyCallback(d: DeliveredCallback): Promise<ApplyResult> {
    try {
      return await this.apply(d);
    } catch (err) {
      // DynamoDB refuses such an item every time (a size or number it cannot hold that the checks below did
      // not foresee): permanent, unlike a throttle or a time-out.
      if ((err as { name?: unknown } | null)?.name === 'ValidationException')
        throw new UnstorableCallbackError(`DynamoDB refused it: ${errorSentence(err)}`, { cause: err });
      throw err;
    }
  }

  private async apply(d: DeliveredCallback): Promise<ApplyResult> {
    const cap: Capacity = { read: 0, write: 0 };
    const cb = d.callback;
    const pk = Keys.taskPk(cb.id);
    const rank = rankOf(cb.timestamp, cb.key);
    const eventKey: Key = { pk, sk: Keys.eventSk(rank) };
    const headerKey: Key = { pk, sk: Keys.headerSk };
    const fileName = fileNameOf(cb);
    const fileKey: Key | null = fileName ? { pk, sk: Keys.fileSk(fileName) } : null;

    const oversized = oversizedKey(cb, d.replayKey) ?? tooDeep(cb) ?? unstorableNumberIn(cb);
    if (oversized) {
      // DynamoDB refuses such a write every time: retrying would only end in the dead-letter queue.
      await this.quarantineParsed(d, 'invalid_callback', oversized, cap);
      return { outcome: 'quarantined', reason: 'invalid_callback', detail: oversized, capacity: cap };
    }

    if (d.replayKey && !(await this.claimReplayKey(cb, d.replayKey, cap))) {
      const detail = 'this nonce, timestamp and signature came before with a different body';
      await this.quarantineParsed(d, 'replayed_signature', detail, cap);
      return { outcome: 'quarantined', reason: 'replayed_signature', detail, capacity: cap };
    }

    for (let attempt = 1; ; attempt++) {
      if (attempt > this.maxAttempts)
        throw new ContentionError(`task ${cb.id} stayed contended after ${this.maxAttempts} attempts`);
      if (attempt > 1) await backoff(attempt);

      const [fileItem, headerItem] = await this.getMany(fileKey ? [fileKey, headerKey] : [headerKey], cap);
      const file = fileKey ? (fileItem ?? null) : null;
      const header = fileKey ? (headerItem ?? null) : (fileItem ?? null);

      const foreign = header ? foreignTask(header, cb) : null;
      if (foreign) {
        await this.quarantineParsed(d, foreign.reason, foreign.detail, cap);
        return { outcome: 'quarantined', ...foreign, capacity: cap };
      }

      const fileHasToken = holdsToken(file, cb.key);
      const headerHasToken = holdsToken(header, cb.key);
      const inEveryItem = (!fileKey || fileHasToken) && headerHasToken;
      // The ledger is read after the items it guards: if a token was pruned before those reads, the
      // ledger entry already existed, so this reads it and stops (see the module comment).
      // Read before the ledger: the callback's effects are in them (it reached every item before its entry).
      const asFound = (): StoredWrite | null => storedAsFound(header, file);
      if (!inEveryItem && (await this.exists(eventKey, cap)))
        return { outcome: 'duplicate', stored: asFound(), capacity: cap };

      let transition: FileTransition | null = null;
      let fileChange: StoredWrite['file'] = null;
      if (fileKey) {
        if (fileHasToken) {
          const t = file!.inflight[cb.key] as FileToken;
          transition = { from: t.f ?? null, to: t.t ?? null };
          fileChange = { before: null, after: fileFromItem(file!) };
        } else {
          const before = file ? fileFromItem(file) : null;
          const after = applyToFile(before, cb);
          transition = { from: fileState(before), to: fileState(after) };
          const inflight = await this.pruneTokens(pk, file?.inflight, cap);
          inflight[cb.key] = { ts: cb.timestamp, f: transition.from, t: transition.to } satisfies FileToken;
          const written = await this.putVersioned(fileToItem(fileKey, cb, after, inflight), file?.ver, cap);
          if (!written) continue;
          fileChange = { before, after };
        }
      }

      let headerAfter = header ? headerFromItem(header) : null;
      let statusBefore: TaskStatus | null = null;
      if (!headerHasToken) {
        const applied = await this.applyHeader(headerKey, header, cb, transition, eventKey, cap);
        if (applied === 'conflict') continue;
        if (applied === 'duplicate') return { outcome: 'duplicate', stored: null, capacity: cap };
        headerAfter = applied.after;
        statusBefore = applied.statusBefore;
      }
      const status = deriveStatus(headerAfter!);

      const created = await this.putLedgerEntry(eventKey, d, fileName, cap);
      // Both items held the token and another delivery wrote the ledger entry first: nothing was new.
      if (!created && inEveryItem) return { outcome: 'duplicate', stored: asFound(), capacity: cap };
      const stored: StoredWrite = { task: toSummary(headerAfter!), statusBefore, file: fileChange };
      return { outcome: 'applied', transition, status, stored, capacity: cap };
    }
  }

  /** Joins the callback into the header, retrying on conflicts without redoing the file. */
  private async applyHeader(
    headerKey: Key,
    header: Item | null,
    cb: Callback,
    transition: FileTransition | null,
    eventKey: Key,
    cap: Capacity,
  ): Promise<{ after: TaskHeader; statusBefore: TaskStatus | null } | 'duplicate' | 'conflict'> {
    let current = header;
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      if (attempt > 1) {
        await backoff(attempt);
        current = await this.get(headerKey, cap);
        if (holdsToken(current, cb.key)) return { after: headerFromItem(current!), statusBefore: null };
        // Created meanwhile by a callback of another service or appKey: the caller starts over and sees it.
        if (current && foreignTask(current, cb)) return 'conflict';
        if (await this.exists(eventKey, cap)) return 'duplicate';
      }
      const before = current ? headerFromItem(current) : null;
      const after = applyToHeader(before, cb, transition);
      const inflight = await this.pruneTokens(headerKey.pk, current?.inflight, cap);
      inflight[cb.key] = cb.timestamp;
      if (await this.putVersioned(headerToItem(headerKey, after, inflight), current?.ver, cap))
        return { after, statusBefore: before ? deriveStatus(before) : null };
    }
    throw new ContentionError(`task ${cb.id} header stayed contended after ${this.maxAttempts} attempts`);
  }

  /** Drops the tokens of callbacks whose ledger entry exists: they can never be applied again. */
  private async pruneTokens(
    pk: string,
    inflight: Record<string, any> | undefined,
    cap: Capacity,
  ): Promise<Record<string, any>> {
    const tokens = { ...(inflight ?? {}) };
    const keys = Object.keys(tokens);
    if (keys.length < this.pruneThreshold) return tokens;
    // A token is the callback's key and timestamp: together they name its ledger entry.
    const timestampOf = (k: string) => (typeof tokens[k] === 'number' ? tokens[k] : tokens[k].ts) as number;
    const found = await this.getMany(
      keys.map((k) => ({ pk, sk: Keys.eventSk(rankOf(timestampOf(k), k)) })),
      cap,
      true,
    );
    keys.forEach((k, i) => {
      if (found[i]) delete tokens[k];
    });
    return tokens;
  }

  /** Records the first callback seen with this replay key; false when another callback holds it. */
  private claimReplayKey(cb: Callback, replayKey: string, cap: Capacity): Promise<boolean> {
    const claim = {
      pk: Keys.replayPk(cb.appKey, replayKey),
      sk: Keys.replaySk,
      eventKey: cb.key,
      expiresAt: this.expiry(),
    };
    return this.putIf(claim, 'attribute_not_exists(pk) OR eventKey = :k', { ':k': { S: cb.key } }, cap);
  }

  /** Writes the ledger entry; false when another delivery of the same callback wrote it first. */
  private async putLedgerEntry(
    key: Key,
    d: DeliveredCallback,
    fileName: string | null,
    cap: Capacity,
  ): Promise<boolean> {
    const cb = d.callback;
    const item = {
      ...key,
      kind: 'event',
      key: cb.key,
      service: cb.service,
      type: cb.type,
      timestamp: cb.timestamp,
      fileName,
      receivedAt: d.receivedAt,
      verdict: d.verdict,
      mode: d.mode,
      requestId: d.requestId,
      messageId: d.messageId,
      raw: d.raw,
      recovered: d.recovered ?? undefined,
      expiresAt: this.expiry(),
    };
    // false: another delivery of the same callback finished first; its entry is as good as this one.
    return this.putIf(item, 'attribute_not_exists(pk)', undefined, cap);
  }

  async quarantine(entry: QuarantineEntry): Promise<Capacity> {
    const cap: Capacity = { read: 0, write: 0 };
    // The entries of one task are found through the bySession index, under keys of their own kind.
    const taskKey = entry.taskId ? Keys.quarantineTaskGsi(entry.taskId) : null;
    const indexed = taskKey !== null && Buffer.byteLength(taskKey, 'utf8') <= MAX_PARTITION_KEY_BYTES;
    const res = await this.client.send(
      new PutItemCommand({
        TableName: this.table,
        Item: toItem({
          ...entry,
          pk: Keys.quarantinePk(dayOf(entry.receivedAt)),
          sk: Keys.quarantineSk(entry.receivedAt, entry.messageId),
          kind: 'quarantine',
          ...(indexed ? { [Index.bySession.pk]: taskKey, [SORT_AT]: entry.receivedAt } : {}),
          expiresAt: this.expiry(),
        }),
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    addCapacity(cap, res.ConsumedCapacity, 'write');
    return cap;
  }

  private async quarantineParsed(
    d: DeliveredCallback,
    reason: QuarantineEntry['reason'],
    detail: string,
    cap: Capacity,
  ) {
    // A callback taken out of the quarantine already has its entry there.
    if (d.recovered) return;
    const c = await this.quarantine({
      reason,
      detail,
      service: d.callback.service,
      raw: d.raw,
      receivedAt: d.receivedAt,
      // Only a recovered callback carries `accepted_unverified`, and it returned above.
      verdict: d.verdict as SignatureVerdict,
      requestId: d.requestId,
      messageId: d.messageId,
      appKey: d.callback.appKey,
      taskId: d.callback.id,
      mode: d.mode,
      signature: d.heldSignature ?? null,
    });
    cap.read += c.read;
    cap.write += c.write;
  }

  private expiry(): number {
    return Math.floor(this.now() / 1000) + this.ttlDays * 86400;
  }

  // -------------------------------------------------------------------------------------------------
  // Reads

  // The paginated reads live in read-pages.ts; the whole-task and whole-listing reads are built on them,
  // so that the CLI and the read API give the same results.

  getTaskPage(ref: TaskRef, page: PageRequest): Promise<TaskPage | null> {
    return this.reader.getTaskPage(ref, page);
  }

  listTasksPage(query: TaskQuery, page: PageRequest): Promise<Page<TaskSummary>> {
    return this.reader.listTasksPage(query, page);
  }

  listEventsPage(ref: TaskRef, page: PageRequest): Promise<Page<StoredEvent> | null> {
    return this.reader.listEventsPage(ref, page);
  }

  async getTask(id: string): Promise<Task | null> {
    const page = await this.getTaskPage({ id }, { limit: Number.POSITIVE_INFINITY });
    return page?.task ?? null;
  }

  async listEvents(id: string): Promise<StoredEvent[]> {
    return (await this.listEventsPage({ id }, { limit: Number.POSITIVE_INFINITY }))?.items ?? [];
  }

  async *listTasks(query: TaskQuery): AsyncIterable<TaskSummary> {
    let remaining = query.limit ?? Number.POSITIVE_INFINITY;
    let cursor: string | undefined;
    do {
      const page = await this.listTasksPage(query, { limit: Math.min(remaining, 500), cursor });
      for (const summary of page.items) yield summary;
      remaining -= page.items.length;
      cursor = page.next ?? undefined;
    } while (cursor && remaining > 0);
  }

  async *listQuarantine(query: QuarantineQuery = {}): AsyncIterable<QuarantineEntry> {
    const limit = query.limit ?? Infinity;
    const until = query.until ?? this.now();
    const since = query.since ?? this.now() - (query.sinceDays ?? 7) * 86400_000;
    const matches = (e: QuarantineEntry) =>
      e.receivedAt >= since &&
      e.receivedAt <= until &&
      (query.reason === undefined || e.reason === query.reason) &&
      (query.appKey === undefined || e.appKey === query.appKey) &&
      (query.taskId === undefined || e.taskId === query.taskId);
    let emitted = 0;
    const emit = function* (entries: Iterable<QuarantineEntry>) {
      for (const entry of entries) {
        if (!matches(entry)) continue;
        yield entry;
        if (++emitted >= limit) return;
      }
    };
    if (query.taskId !== undefined) {
      // The task's entries through the index (keys only), newest first, then the entries by key.
      let keys: Key[] = [];
      const flush = async () => {
        const items = await this.getMany(keys, { read: 0, write: 0 });
        keys = [];
        return items.filter((i): i is Item => i !== null).map(quarantineFromItem);
      };
      for await (const item of this.queryAll({
        IndexName: Index.bySession.name,
        KeyConditionExpression: `${Index.bySession.pk} = :v AND ${SORT_AT} BETWEEN :a AND :b`,
        ExpressionAttributeValues: {
          ':v': { S: Keys.quarantineTaskGsi(query.taskId) },
          ':a': { N: String(since) },
          ':b': { N: String(until) },
        },
        ScanIndexForward: false,
      })) {
        keys.push({ pk: item.pk, sk: item.sk });
        if (keys.length === 50) {
          yield* emit(await flush());
          if (emitted >= limit) return;
        }
      }
      if (keys.length > 0) yield* emit(await flush());
      return;
    }
    // One partition per day, newest first; the other filters are applied to what each day holds.
    for (let t = until; dayOf(t) >= dayOf(since); t -= 86400_000) {
      for await (const item of this.queryAll({
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :a AND :b',
        ExpressionAttributeValues: {
          ':pk': { S: Keys.quarantinePk(dayOf(t)) },
          ':a': { S: Keys.quarantineSk(since, '') },
          ':b': { S: Keys.quarantineSk(until, '\uffff') },
        },
        ScanIndexForward: false,
      })) {
        yield* emit([quarantineFromItem(item)]);
        if (emitted >= limit) return;
      }
    }
  }

  async countQuarantined(taskId: string): Promise<number> {
    let count = 0;
    let start: Record<string, AttributeValue> | undefined;
    do {
      const res = await this.client.send(
        new QueryCommand({
          TableName: this.table,
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

  async markQuarantineApplied(
    entry: Pick<QuarantineEntry, 'receivedAt' | 'messageId'>,
    applied: QuarantineApplied,
  ): Promise<boolean> {
    // A read and a conditional put rather than an UpdateItem: the worker's role, which shares this class,
    // is granted only the operations the worker performs.
    const cap: Capacity = { read: 0, write: 0 };
    const key = {
      pk: Keys.quarantinePk(dayOf(entry.receivedAt)),
      sk: Keys.quarantineSk(entry.receivedAt, entry.messageId),
    };
    const item = await this.get(key, cap);
    if (!item || item.applied) return false;
    return this.putIf({ ...item, applied }, 'attribute_exists(pk) AND attribute_not_exists(applied)', undefined, cap);
  }

  // -------------------------------------------------------------------------------------------------
  // Low-level helpers

  private async get(key: Key, cap: Capacity, projection?: string): Promise<Item | null> {
    const res = await this.client.send(
      new GetItemCommand({
        TableName: this.table,
        Key: marshall(key),
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
        ...(projection ? { ProjectionExpression: projection } : {}),
      }),
    );
    addCapacity(cap, res.ConsumedCapacity, 'read');
    return res.Item ? fromItem(res.Item) : null;
  }

  private async exists(key: Key, cap: Capacity): Promise<boolean> {
    return (await this.get(key, cap, 'pk')) !== null;
  }

  /** Strongly consistent reads of several items, in the order of `keys` (null where absent). */
  private getMany(keys: Key[], cap: Capacity, keysOnly = false): Promise<(Item | null)[]> {
    return batchGetItems(this.client, this.table, keys, cap, keysOnly);
  }

  /** Puts an item if its version is still the one read (or it is still absent). */
  private putVersioned(item: Item, previousVersion: number | undefined, cap: Capacity): Promise<boolean> {
    const versioned = { ...item, ver: (previousVersion ?? 0) + 1 };
    return previousVersion === undefined
      ? this.putIf(versioned, 'attribute_not_exists(pk)', undefined, cap)
      : this.putIf(versioned, 'ver = :v', { ':v': { N: String(previousVersion) } }, cap);
  }

  /** A conditional PutItem: false when the condition does not hold. */
  private async putIf(
    item: Item,
    condition: string,
    values: Record<string, AttributeValue> | undefined,
    cap: Capacity,
  ): Promise<boolean> {
    try {
      const res = await this.client.send(
        new PutItemCommand({
          TableName: this.table,
          Item: toItem(item),
          ConditionExpression: condition,
          ...(values ? { ExpressionAttributeValues: values } : {}),
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      addCapacity(cap, res.ConsumedCapacity, 'write');
      return true;
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      cap.write += FAILED_CONDITION_WCU;
      return false;
    }
  }

  private async *queryAll(input: Omit<QueryCommandInput, 'TableName'>): AsyncIterable<Item> {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const res = await this.client.send(
        new QueryCommand({ TableName: this.table, ...input, ExclusiveStartKey: start }),
      );
      for (const raw of res.Items ?? []) yield fromItem(raw);
      start = res.LastEvaluatedKey;
    } while (start);
  }
}

/**
 * Why a callback may not touch the task whose header item this is, or null. A task id names one task of
 * one service and one appKey: a callback of another appKey must never change it, whatever it ranks.
 */
function foreignTask(
  header: Item,
  cb: Callback,
): { reason: 'service_mismatch' | 'app_key_mismatch'; detail: string } | null {
  if (header.service !== cb.service)
    return {
      reason: 'service_mismatch',
      detail: `task ${cb.id} is a ${header.service} task; this is a ${cb.service} callback`,
    };
  if (header.appKey !== cb.appKey)
    return {
      reason: 'app_key_mismatch',
      detail:
        `task ${cb.id} belongs to appKey ${JSON.stringify(header.appKey)}; ` +
        `this callback is from appKey ${JSON.stringify(cb.appKey)}`,
    };
  return null;
}

// ---------------------------------------------------------------------------------------------------
// What DynamoDB can never store

/** DynamoDB's limits on key values, in UTF-8 bytes: partition keys (of the table and of an index), sort keys. */
const MAX_PARTITION_KEY_BYTES = 2048;
const MAX_SORT_KEY_BYTES = 1024;
/** The longest status, for the byAppStatus index key. */
const LONGEST_STATUS = TASK_STATUSES.reduce((a, b) => (b.length > a.length ? b : a));

/**
 * Which of the keys a callback would be written under is longer than DynamoDB allows (a recordId,
 * fileName, roomId or nonce of thousands of characters), or null. The ingest's minimal check lets such a
 * body through; no genuine callback carries one.
 */
function oversizedKey(cb: Callback, replayKey: string | null): string | null {
  const bytes = (s: string) => Buffer.byteLength(s, 'utf8');
  const fileName = fileNameOf(cb);
  const partitionKeys: [string, string | null][] = [
    [ID_FIELD_OF[cb.service], Keys.taskPk(cb.id)],
    ['roomId', cb.roomId ? Keys.roomGsi(cb.roomId) : null],
    ['sessionId', cb.sessionId ? Keys.sessionGsi(cb.sessionId) : null],
    ['appKey', Keys.appStatusGsi(cb.appKey, LONGEST_STATUS)],
    ['appKey (in the replay key)', replayKey ? Keys.replayPk(cb.appKey, replayKey) : null],
  ];
  for (const [field, key] of partitionKeys) {
    if (key !== null && bytes(key) > MAX_PARTITION_KEY_BYTES)
      return `${field} is too long to be stored (a DynamoDB key holds at most ${MAX_PARTITION_KEY_BYTES} bytes)`;
  }
  if (fileName !== null && bytes(Keys.fileSk(fileName)) > MAX_SORT_KEY_BYTES) {
    return `output.fileName is too long to be stored (a DynamoDB sort key holds at most ${MAX_SORT_KEY_BYTES} bytes)`;
  }
  return null;
}

/** DynamoDB stores maps and lists nested at most this deep; the header item holds `config` as a map. */
const MAX_NESTING = 32;

/** Levels of maps and lists in a value (a scalar is 0). Iterative: a body may nest far deeper than the stack. */
function nestingDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    deepest = Math.max(deepest, depth + 1);
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** The config is kept as received; nested deeper than DynamoDB allows, the header could never be written. */
function tooDeep(cb: Callback): string | null {
  return cb.config && nestingDepth(cb.config) > MAX_NESTING
    ? `config is nested deeper than the ${MAX_NESTING} levels DynamoDB stores`
    : null;
}

// ---------------------------------------------------------------------------------------------------
// Item mapping

/**
 * Tokens kept in an item's `inflight` map, keyed by event key: the header keeps the callback's timestamp,
 * a file also the state change the callback caused, so that a redelivery after a crash gives the header
 * the same change. Small on purpose: every byte of the header is paid at each write.
 */
interface FileToken {
  ts: number;
  f: FileState;
  t: FileState;
}

function holdsToken(item: Item | null, eventKey: string): boolean {
  return !!item?.inflight && Object.hasOwn(item.inflight, eventKey);
}

function headerToItem(key: Key, h: TaskHeader, inflight: Record<string, number>): Item {
  const status = deriveStatus(h);
  const sortAt = sortTimeOf(h);
  return {
    ...key,
    kind: 'task',
    ...h,
    status,
    [SORT_AT]: sortAt,
    g1pk: h.roomId ? Keys.roomGsi(h.roomId) : undefined,
    g2pk: h.sessionId ? Keys.sessionGsi(h.sessionId) : undefined,
    g3pk: Keys.appStatusGsi(h.appKey, status),
    g4pk: Keys.dayGsi(dayOf(sortAt)),
    inflight,
  };
}

function fileToItem(key: Key, cb: Callback, f: FileRecord, inflight: Record<string, FileToken>): Item {
  return { ...key, kind: 'file', service: cb.service, taskId: cb.id, ...f, inflight };
}

function quarantineFromItem(item: Item): QuarantineEntry {
  const { pk: _pk, sk: _sk, kind: _kind, expiresAt: _e, [Index.bySession.pk]: _g, [SORT_AT]: _s, ...entry } = item;
  return { ...entry, taskId: entry.taskId ?? null, appKey: entry.appKey ?? null } as QuarantineEntry;
}

/** The task and the file as a delivery found them, with no "before" (see StoredWrite). */
function storedAsFound(header: Item | null, file: Item | null): StoredWrite | null {
  if (!header) return null;
  return {
    task: toSummary(headerFromItem(header)),
    statusBefore: null,
    file: file ? { before: null, after: fileFromItem(file) } : null,
  };
}
