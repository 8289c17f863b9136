// The shape of the task store's items: a task header, a file, a callback key recorded on its own item, a
// delivery (replay claim and raw body); ./assembled-task.ts adds them up to a task or its summary. Null
// fields are left out of items: every byte of an item is paid at each write.
import { createHash } from 'node:crypto';
import type { Callback } from '../../../domain/callback.ts';
import type { DeliveredCallback, StoredEvent } from '../../../domain/task-store.ts';
import { sortTimeOf, toSummary, type TaskParts } from '../../../domain/task-parts.ts';
import { errorFromItem, storedError } from './error-facts.ts';
import { readableFile, readableHeader } from './readable.ts';
import type { FileMark, TaskCounts } from '../../../domain/task-counts.ts';
import {
  emptyTally,
  fileNameOf,
  fileState,
  rankOf,
  timestampOfRank,
  type FileRecord,
  type FileState,
  type Tally,
  type TaskHeader,
} from '../../../domain/task.ts';
import type { Item, Key } from './table-client.ts';
import { EventsIndex, Keys, SORT_AT, dayOf, readScope } from './table.ts';
import { carriedTime, fileMarksOf, fileMarksToItem, timeOf } from '../time/time-items.ts';

/** The appKey a header item belongs to (from its key). */
export const appKeyOf = (header: Item): string => readScope(header.sk, Keys.headerPrefix).appKey;

/**
 * Where the raw body of a recorded callback lives, as kept beside its key: `S<digest>` a delivery keyed
 * by its replay key, `E` a delivery keyed by the event key (no signature values).
 */
export type BodyRef = string;

/**
 * What is kept beside a recorded callback key: `u` (an upload, which counts as an attempt) or `s`, the
 * callback's timestamp in base 36 (`tasks events` lists callbacks in timestamp order without reading their
 * bodies first), a dot, and its BodyRef.
 */
const UPLOAD = 'u';
const OTHER = 's';

export interface Recorded {
  upload: boolean;
  timestamp: number;
  ref: BodyRef;
}

export function recordedValue(cb: Callback, ref: BodyRef): string {
  return `${cb.upload ? UPLOAD : OTHER}${Math.max(0, Math.trunc(cb.timestamp)).toString(36)}.${ref}`;
}

export function readRecorded(value: string): Recorded {
  const dot = value.indexOf('.');
  return {
    upload: value.startsWith(UPLOAD),
    timestamp: Number.parseInt(value.slice(1, dot), 36),
    ref: value.slice(dot + 1),
  };
}

/** 132 bits of SHA-256 of the replay key, base64url: the delivery's key, and what a recorded key points to. */
function replayDigest(replayKey: string): string {
  return createHash('sha256').update(replayKey, 'utf8').digest('base64url').slice(0, 22);
}

export function bodyRefOf(d: Pick<DeliveredCallback, 'replayKey'>): BodyRef {
  return d.replayKey ? `S${replayDigest(d.replayKey)}` : 'E';
}

/** The item a BodyRef points to. */
export function bodyKey(appKey: string, _taskId: string, eventKey: string, ref: BodyRef): Key {
  return { pk: Keys.deliveryPk(appKey, ref === 'E' ? `E${eventKey}` : ref), sk: Keys.deliverySk };
}

/** A raw body's keys in the byTaskTime index: under its task, at its rank. */
function eventsIndexKeys(appKey: string, taskId: string, timestamp: number, eventKey: string): Item {
  return { [EventsIndex.pk]: Keys.eventsGsi(appKey, taskId), [EventsIndex.sk]: rankOf(timestamp, eventKey) };
}

/**
 * The sequence number of the last message whose end a header put recorded outside its batch's count (`uw`): a
 * batch received again writes its header puts at once, and may stop before its count. Until a count absorbs that
 * message, the header says more than its counts: an end whose file no count has charged yet (`writtenAhead`).
 */
export const UNCOUNTED_END = 'uw';

/** Whether a header records an end its counts have not absorbed (`through`: what they absorbed). */
function writtenAhead(header: Item, through: string | undefined): boolean {
  const end = header[UNCOUNTED_END];
  return typeof end === 'string' && (through === undefined || end > through);
}

/**
 * What a delivery says of its callback: the full parse's callback, or, for a body the write path will not apply
 * (the ingest claims its signature all the same), what the minimal check read, without a timestamp and so never
 * listed among its task's callbacks.
 */
type DeliveryFacts = Pick<Callback, 'appKey' | 'id' | 'key' | 'service'> &
  Partial<Pick<Callback, 'timestamp' | 'file' | 'upload'>> & { type: number };

/** A delivery as stored; the message id is known once the worker has the message, not when the ingest claims. */
export type DeliveryOf = Omit<DeliveredCallback, 'callback' | 'messageId'> & {
  callback: DeliveryFacts;
  messageId?: string;
};

/** Epoch seconds when an item kept `ttlDays` from `fromMs` may go (the TTL attribute, `expiresAt`). */
export const expiresAtFor = (fromMs: number, ttlDays: number): number => Math.floor(fromMs / 1000) + ttlDays * 86400;

export function deliveryToItem(d: DeliveryOf, ref: BodyRef, expiresAt: number, indexed = true): Item {
  const cb = d.callback;
  return {
    ...bodyKey(cb.appKey, cb.id, cb.key, ref),
    ...(indexed && cb.timestamp !== undefined ? eventsIndexKeys(cb.appKey, cb.id, cb.timestamp, cb.key) : {}),
    eventKey: cb.key,
    service: cb.service,
    taskId: cb.id,
    type: cb.type,
    timestamp: cb.timestamp,
    raw: d.raw,
    receivedAt: d.receivedAt,
    verdict: d.verdict,
    mode: d.mode,
    requestId: d.requestId ?? undefined,
    messageId: d.messageId,
    fileName: fileNameOf(cb) ?? undefined,
    recovered: d.recovered ?? undefined,
    expiresAt,
  };
}

/** A delivery, as `tasks events` shows it. */
export function eventFromItem(item: Item): StoredEvent {
  return {
    key: item.eventKey,
    type: item.type,
    timestamp: item.timestamp,
    receivedAt: item.receivedAt,
    verdict: item.verdict,
    requestId: item.requestId ?? null,
    raw: item.raw,
    expiresAt: item.expiresAt ?? null,
    fileName: item.fileName ?? null,
    recovered: item.recovered ?? null,
  };
}

/** Drops null and undefined fields. */
function compact(fields: Record<string, unknown>): Item {
  const out: Item = {};
  for (const [k, v] of Object.entries(fields)) if (v !== null && v !== undefined) out[k] = v;
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Header

/** Recorded keys of the callbacks the header absorbed (starts and ends), each with its recordedValue. */
export type HeaderKeys = Record<string, string>;

/**
 * The header as an item. The id and appKey are in its key. A start's rank is its identity rank (a start
 * is always the identity when there is one) and a config's rank is usually the identity's: written only
 * when they differ, as the header is close to the 1 KB a write unit covers.
 */
export function headerToItem(key: Key, h: TaskHeader, tally: Tally, keys: HeaderKeys, carried: Item | null): Item {
  const sortAt = sortTimeOf(h);
  // Kept elsewhere: the id and appKey in the key; the identity's and the end's times in their ranks; a failed start
  // or end in its failure (the header is close to the 1 KB of a write unit).
  const { id: _inPk, appKey: _inSk, identAt: _inIdentRank, endedAt: _inEndRank, startOrEndFailed: _, ...facts } = h;
  const item: Item = {
    ...key,
    ...countersOf(carried),
    ...compact({
      ...facts,
      startRank: h.startRank !== null && `0${h.startRank}` === h.identRank ? null : h.startRank,
      configRank: h.configRank === h.identRank ? null : h.configRank,
      endOk: h.endOk || null,
    }),
    failure: storedError(h.failure),
    lastError: storedError(tally.lastError),
    updatedAt: tally.updatedAt ?? undefined,
    keys,
    [SORT_AT]: sortAt,
    ...identityIndexKeys(h),
    g3pk: Keys.appGsi(h.appKey),
    g4pk: Keys.dayGsi(dayOf(sortAt)),
  };
  return withReadable(item);
}

/** A header item with the plain attributes a person reads (./readable.ts), its status as the read API reports it. */
export function withReadable(header: Item): Item {
  const parts = headerParts(header);
  const ids = { id: header.pk.slice(Keys.taskPk('').length), appKey: appKeyOf(header) };
  const { startedAt, endedAt } = parts.header;
  return readableHeader(header, ids, toSummary(parts).status, { startedAt, endedAt, updatedAt: parts.tally.updatedAt });
}

/**
 * The header's counts (`COUNT_ATTRS`), the sequence number of the last message it absorbed (`seq`) and the
 * time it first completed (`doneAt`), as a header put carries them over from the item it replaces (zero
 * counts for a new header). Only the count update and a recount change them.
 */
export const COUNT_ATTRS: Record<keyof TaskCounts, string> = {
  files: 'nFiles',
  pending: 'nPending',
  uploaded: 'nUploaded',
  failed: 'nFailed',
  events: 'nEvents',
};

function countersOf(previous: Item | null): Item {
  const out: Item = {};
  for (const attr of Object.values(COUNT_ATTRS)) out[attr] = previous ? (previous[attr] ?? 0) : 0;
  if (previous?.seq !== undefined) out.seq = previous.seq;
  if (previous?.doneAt !== undefined) out.doneAt = previous.doneAt;
  if (previous?.[UNCOUNTED_END] !== undefined) out[UNCOUNTED_END] = previous[UNCOUNTED_END];
  Object.assign(out, carriedTime(previous));
  return out;
}

/** The counts a header keeps. */
export function countsOf(header: Item): TaskCounts {
  const c = {} as TaskCounts;
  for (const [k, attr] of Object.entries(COUNT_ATTRS) as [keyof TaskCounts, string][]) c[k] = header[attr] ?? 0;
  return c;
}

/**
 * The task as its header alone says: its counts and tally, no files. Null for a header without counts. An end
 * recorded beyond what the counts absorbed (`through`, by default the header's `seq`: `writtenAhead`) may name a
 * file they have not charged yet: until they do, the task is read as one whose end has not succeeded, never as
 * completed off counts that miss a file (its status is then `ended`, as of its counts). Counts can miss files
 * another way too, until a batch charges them: a file a later message wrote before its batch came apart. So a
 * task is completed only once a recount of its files as they stand has said so and set `doneAt`
 * (HeaderCounts.confirmCompletion): without `doneAt` its end reads as not succeeded yet. `judging`: the count's
 * own view, which decides whether to confirm, without that rule.
 */
export function headerParts(header: Item, through: string | undefined = header.seq, judging = false): TaskParts {
  const counts = countsOf(header);
  const read = headerFromItem(header);
  const unconfirmed = !judging && header.doneAt === undefined;
  return {
    header: writtenAhead(header, through) || unconfirmed ? { ...read, endOk: false } : read,
    files: [],
    tally: tallyOf(header),
    eventCount: counts.events,
    counts,
    completedAt: header.doneAt ?? null,
    version: header.ver ?? 0,
    time: timeOf(header),
  };
}

/** A header's room and session index keys (`g1pk`, `g2pk`), each there when the task has one. */
function identityIndexKeys(h: Pick<TaskHeader, 'appKey' | 'roomId' | 'sessionId'>): {
  g1pk?: string;
  g2pk?: string;
} {
  return {
    g1pk: h.roomId ? Keys.roomGsi(h.appKey, h.roomId) : undefined,
    g2pk: h.sessionId ? Keys.sessionGsi(h.appKey, h.sessionId) : undefined,
  };
}

export function headerFromItem(item: Item): TaskHeader {
  const identRank: string = item.identRank;
  return {
    ...headerFactsOf(item),
    id: item.pk.slice(Keys.taskPk('').length),
    identRank,
    identAt: timestampOfRank(identRank.slice(1)),
    appKey: readScope(item.sk, Keys.headerPrefix).appKey,
    configRank: item.configRank ?? (item.config !== undefined ? identRank : null),
    startRank: item.startRank ?? (item.startedAt !== undefined ? identRank.slice(1) : null),
  };
}

/**
 * The header facts an item keeps under their own names, null fields left out (this layout's headers and
 * the earlier layout's alike): all but the task's keys, its identity and the ranks.
 */
export function headerFactsOf(
  item: Item,
): Omit<TaskHeader, 'id' | 'appKey' | 'identRank' | 'identAt' | 'configRank' | 'startRank'> {
  return {
    service: item.service,
    roomId: item.roomId ?? null,
    sessionId: item.sessionId ?? null,
    userId: item.userId ?? null,
    mode: item.mode ?? null,
    extra: item.extra ?? null,
    config: item.config ?? null,
    startedAt: item.startedAt ?? null,
    startFileName: item.startFileName ?? null,
    endRank: item.endRank ?? null,
    endedAt: item.endRank ? timestampOfRank(item.endRank) : null,
    endOk: item.endOk ?? false,
    startOrEndFailed: item.failure !== undefined,
    failure: errorFromItem(item.failure),
  };
}

/** The tally of a header or file item. */
export function tallyOf(item: Item | null): Tally {
  return item ? { lastError: errorFromItem(item.lastError), updatedAt: item.updatedAt ?? null } : emptyTally();
}

export function keysOf(item: Item | null): Record<string, string> {
  return item?.keys ?? {};
}

// ---------------------------------------------------------------------------------------------------
// Files and recorded keys

/** The file as an item; its name is in its key. Its mark (sequence-numbered writes) as given, else kept. */
export function fileToItem(
  key: Key,
  f: FileRecord,
  tally: Tally,
  keys: Record<string, string>,
  mark: FileMark | null,
): Item {
  const { attempts: _counted, fileName: _inSk, warnedAt: _w, lostAt: _l, ...facts } = f;
  return {
    ...key,
    ...compact({ ...facts, upload: f.upload ? compact(f.upload) : null }),
    ...fileMarksToItem(f),
    lastError: storedError(tally.lastError),
    updatedAt: tally.updatedAt ?? undefined,
    keys,
    ...markToItem(mark),
    ...readableFile(f.fileName, fileState(f), f.lostAt != null),
  };
}

const STATE_CODES: Record<Exclude<FileState, null>, string> = { pending: 'p', uploaded: 'u', failed: 'f' };

/** A file's mark as attributes: `ms` its last writer's sequence number, `mc` the state counted, `me` events. */
function markToItem(mark: FileMark | null): Item {
  if (!mark) return {};
  return compact({ ms: mark.seq, mc: mark.counted ? STATE_CODES[mark.counted] : null, me: mark.events });
}

export function markOf(file: Item | null): FileMark | null {
  if (!file || typeof file.ms !== 'string') return null;
  const counted = (Object.entries(STATE_CODES).find(([, code]) => code === file.mc)?.[0] ?? null) as FileState;
  return { seq: file.ms, counted, events: file.me ?? 0 };
}

export function fileFromItem(item: Item): FileRecord {
  const upload = item.upload
    ? {
        rank: item.upload.rank,
        ok: item.upload.ok,
        code: item.upload.code,
        message: item.upload.message ?? null,
        url: item.upload.url ?? null,
        at: item.upload.at,
      }
    : null;
  return {
    fileName: readScope(item.sk, 'P#').rest.slice('#F#'.length),
    sizeRank: item.sizeRank ?? null,
    size: item.size ?? null,
    upload,
    firstFailureAt: item.firstFailureAt ?? null,
    attempts: 0,
    ...fileMarksOf(item),
  };
}

/** A callback key recorded on its own item: its file already keeps as many keys as it holds inline. */
export function recordedToItem(key: Key, fileName: string, cb: Callback, ref: BodyRef, seq: string | null): Item {
  return { ...key, fileName, v: recordedValue(cb, ref), ...(seq ? { q: seq } : {}) };
}

/** Upload keys a file item records inline. */
export function inlineAttempts(file: Item | null): number {
  let n = 0;
  for (const value of Object.values(keysOf(file))) if (value.startsWith(UPLOAD)) n += 1;
  return n;
}

/** Whether a recorded-key item's callback was an upload. */
export const isUploadRecord = (item: Item): boolean => String(item.v).startsWith(UPLOAD);
