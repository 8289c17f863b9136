// What DynamoDB can never store: key values over its size limits, items over 400 KB and maps nested deeper
// than it allows.
// The ingest's minimal check lets such bodies through (no genuine callback carries one); the worker
// quarantines them rather than retrying a write DynamoDB refuses every time.
import { Buffer } from 'node:buffer';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Callback } from '../../../domain/callback.ts';
import { fileNameOf } from '../../../domain/task.ts';
import { Keys } from './table.ts';
import { taskEntrySk } from '../time/time-buckets.ts';

/** DynamoDB's limits on key values, in UTF-8 bytes: partition keys (of the table and of an index), sort keys. */
export const MAX_PARTITION_KEY_BYTES = 2048;
const MAX_SORT_KEY_BYTES = 1024;

/**
 * Which of the keys a callback, its task's items and its task's entries would be written under is longer than
 * DynamoDB allows (a recordId, fileName, roomId or appKey of thousands of characters), or null: checked before the
 * first write, so that a callback no write could ever store leaves nothing behind. The replay key is stored as a
 * digest of fixed size. A task's id is in partition keys (its items', its callbacks' index) and in the sort key of
 * its time bucket entries (DUE, CHG), with its appKey: that one bounds it, at about 1,000 bytes.
 */
export function oversizedKey(cb: Callback): string | null {
  const bytes = (s: string) => Buffer.byteLength(s, 'utf8');
  const idField = cb.service === 'recording' ? 'recordId' : 'imageId';
  const fileName = fileNameOf(cb);
  // The appKey's own keys first: the room's and the session's hold the appKey too, and the field to name
  // is the one that is too long by itself.
  const partitionKeys: [string, string | null][] = [
    [idField, Keys.taskPk(cb.id)],
    ['appKey', Keys.appGsi(cb.appKey)],
    ['appKey', Keys.deliveryPk(cb.appKey, `E${cb.key}`)],
    [idField, Keys.eventsGsi(cb.appKey, cb.id)],
    ['roomId', cb.roomId ? Keys.roomGsi(cb.appKey, cb.roomId) : null],
    ['sessionId', cb.sessionId ? Keys.sessionGsi(cb.appKey, cb.sessionId) : null],
  ];
  for (const [field, key] of partitionKeys) {
    if (key !== null && bytes(key) > MAX_PARTITION_KEY_BYTES)
      return `${field} is too long to be stored (a DynamoDB key holds at most ${MAX_PARTITION_KEY_BYTES} bytes)`;
  }
  const sortKeys: [string, string | null, string][] = [
    ['appKey', Keys.headerSk(cb.appKey), "its task's header"],
    [idField, taskEntrySk(cb), "its task's time bucket entries, with the appKey"],
    ['output.fileName', fileName !== null ? Keys.recordedSk(cb.appKey, fileName, cb.key) : null, 'its callbacks'],
  ];
  for (const [field, key, what] of sortKeys) {
    if (key !== null && bytes(key) > MAX_SORT_KEY_BYTES)
      return (
        `${field} is too long to be stored: it keys ${what} (${bytes(key)} bytes; ` +
        `a DynamoDB sort key holds at most ${MAX_SORT_KEY_BYTES})`
      );
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
export function tooDeep(cb: Callback): string | null {
  return cb.config && nestingDepth(cb.config) > MAX_NESTING
    ? `config is nested deeper than the ${MAX_NESTING} levels DynamoDB stores`
    : null;
}

/** DynamoDB's limit on one item, names and values together. */
export const MAX_ITEM_BYTES = 400 * 1024;

/**
 * An item's size as DynamoDB counts it (UTF-8 names and values, a number at most 21 bytes, 3 bytes and one
 * per element for a map or a list), rounded up where DynamoDB's count of a number depends on its digits.
 */
export function itemBytes(item: Record<string, AttributeValue>): number {
  let total = 0;
  for (const [name, value] of Object.entries(item)) total += Buffer.byteLength(name, 'utf8') + valueBytes(value);
  return total;
}

function valueBytes(v: AttributeValue): number {
  if (v.S !== undefined) return Buffer.byteLength(v.S, 'utf8');
  if (v.N !== undefined) return Math.min(21, Math.ceil(v.N.length / 2) + 2);
  if (v.B !== undefined) return v.B.byteLength;
  if (v.M !== undefined) return 3 + itemBytes(v.M) + Object.keys(v.M).length;
  if (v.L !== undefined) return 3 + v.L.reduce((n, e) => n + 1 + valueBytes(e), 0);
  if (v.SS !== undefined) return v.SS.reduce((n, e) => n + Buffer.byteLength(e, 'utf8'), 0);
  if (v.NS !== undefined) return v.NS.length * 21;
  return 1;
}

/**
 * Whether DynamoDB refused a request for what it holds (a key or an item it can never store that the checks above
 * did not foresee): the same request fails the same way every time, unlike a throttle or a time-out.
 */
export const refusedByDynamo = (err: unknown): boolean =>
  (err as { name?: unknown } | null)?.name === 'ValidationException';

/** Why DynamoDB would refuse an item for its size, or null. */
export function oversizedItem(what: string, item: Record<string, AttributeValue>): string | null {
  const bytes = itemBytes(item);
  return bytes > MAX_ITEM_BYTES
    ? `the task's ${what} would be ${bytes} bytes (a DynamoDB item holds at most ${MAX_ITEM_BYTES})`
    : null;
}
