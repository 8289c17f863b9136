// Cursors of the paginated reads: opaque to callers, base64url of a small JSON object saying where the
// next page starts (the last file name or event rank returned; for listings, the query as resolved on the
// first page and a position in each stream of index partitions). Checked on the way in, never trusted.
import { Buffer } from 'node:buffer';
import * as v from 'valibot';
import { InvalidCursorError } from '../../../domain/task-store.ts';
import { TASK_STATUSES } from '../../../domain/task.ts';
import { VERIFICATION_STATES } from '../../../domain/verification.ts';
import { SERVICES } from '../../../platform/services.ts';
import { isInTimeRange } from '../../../time-point.ts';

/** Longest cursor accepted: far above any this store makes, far below any request limit. */
const MAX_CURSOR_CHARS = 8192;
/** A sort key holds at most 1024 bytes, a partition key 2048. */
const SortKeyPart = v.pipe(
  v.string(),
  v.check((s) => Buffer.byteLength(s, 'utf8') <= 1024),
);

export const FilesCursor = v.object({ f: SortKeyPart });
export type FilesCursor = v.InferOutput<typeof FilesCursor>;
export const EventsCursor = v.object({ e: SortKeyPart });
export type EventsCursor = v.InferOutput<typeof EventsCursor>;

const Filter = v.optional(v.pipe(v.string(), v.minLength(1)));
/** A time in a cursor is checked as a time given as a parameter is: within the range tasks are kept under. */
const Time = v.pipe(v.number(), v.check(isInTimeRange));
/** A listing's query as resolved on its first page: filters and the absolute time window. */
export const ResolvedQuery = v.object({
  r: Filter,
  s: Filter,
  a: Filter,
  st: v.optional(v.picklist(TASK_STATUSES)),
  sv: v.optional(v.picklist(SERVICES)),
  u: Filter,
  /** Only tasks with lost files; only stalled tasks; a failed file purged at or before this time. */
  lo: v.optional(v.literal(true)),
  sd: v.optional(v.literal(true)),
  pb: v.optional(Time),
  /** Only tasks with a file in this verification state (../storage/verifications.ts). */
  vf: v.optional(v.picklist(VERIFICATION_STATES)),
  /** Listings by time of change or of end (../read/listing-by-time.ts): the earliest `updatedAt` or `endedAt`. */
  us: v.optional(Time),
  es: v.optional(Time),
  from: Time,
  to: Time,
});
export type ResolvedQuery = v.InferOutput<typeof ResolvedQuery>;

/**
 * Where a stream of index partitions stands: partition `i`, after the entry (`s` = sortAt, `k` and `h` =
 * the task header's key) when one of it was taken already; null once the stream is exhausted.
 */
export const Position = v.nullable(
  v.object({
    i: v.pipe(v.number(), v.integer(), v.minValue(0)),
    s: v.optional(Time),
    k: v.optional(
      v.pipe(
        v.string(),
        v.startsWith('TASK#'),
        v.check((s) => Buffer.byteLength(s, 'utf8') <= 2048),
      ),
    ),
    /** The task header's sort key (its appKey). */
    h: v.optional(v.pipe(v.string(), v.startsWith('H#'), SortKeyPart)),
  }),
);
export type Position = v.InferOutput<typeof Position>;
export const TasksCursor = v.object({ q: ResolvedQuery, p: v.array(Position) });
export type TasksCursor = v.InferOutput<typeof TasksCursor>;

/**
 * Where a listing by time of change or of end stands: the hour bucket it reads (newest first) and the sort key
 * of the last entry item taken in it (null: none yet).
 */
/** `n`: the tasks of the entry after `k` already listed (a page that stopped within a shared entry). */
export const ByTimeCursor = v.object({
  q: ResolvedQuery,
  b: Time,
  k: v.nullable(SortKeyPart),
  n: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000))),
});
export type ByTimeCursor = v.InferOutput<typeof ByTimeCursor>;

export function encodeCursor(value: object): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export function encodeTasksCursor(q: ResolvedQuery, p: Position[]): string {
  return encodeCursor({ q, p } satisfies TasksCursor);
}

export function decodeCursor<S extends v.GenericSchema>(text: string, schema: S): v.InferOutput<S> {
  const invalid = () => new InvalidCursorError('the cursor is not one this listing gave out');
  if (text.length === 0 || text.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(text)) throw invalid();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  const parsed = v.safeParse(schema, value);
  if (!parsed.success) throw invalid();
  return parsed.output;
}
