// Whether a file the platform reported uploaded is really in its storage (docs/verification.md): what a check
// of the storage found, judged into the file's verification. The unit of a reported `output.fileSize` is not
// stated by the platform, so the stored size is only compared as it is (`matches`, `differs`, or `unknown`
// where no size was reported): never converted, never guessed. A storage that answers 403 or 404 never
// counts as holding the file. Pure: no AWS import.
import type { FileView } from './task.ts';

/** A file's verification states (docs/contract.md §4); `pending` until the file has been checked. */
export const VERIFICATION_STATES = ['verified', 'missing', 'empty', 'size_differs', 'unverifiable', 'pending'] as const;
export type VerificationState = (typeof VERIFICATION_STATES)[number];
/** The states a check of the storage gives. */
export type CheckedState = Exclude<VerificationState, 'pending'>;
export const CHECKED_STATES: readonly CheckedState[] = ['verified', 'missing', 'empty', 'size_differs', 'unverifiable'];

/** The states a `file.missing` event reports: the storage answered, and it does not hold the file reported. */
const MISSING_STATES: readonly CheckedState[] = ['missing', 'empty', 'size_differs'];
export const isMissingState = (state: VerificationState): boolean => (MISSING_STATES as string[]).includes(state);

export type SizeMatch = 'matches' | 'differs' | 'unknown';

/** A file's verification as the task JSON carries it (null for a file not uploaded). */
export interface FileVerification {
  state: VerificationState;
  /** When the storage was checked (receiver's clock, epoch ms); null while pending. */
  checkedAt: number | null;
  /** The size the storage holds (bytes), when it answered with the file. */
  size: number | null;
  sizeMatches: SizeMatch;
  /** What the storage said of the object: its ETag, and its checksum when it keeps one. */
  etag: string | null;
  checksum: string | null;
  /** Why it is not verified, in one sentence: the storage's answer (unverifiable, missing), or the sizes. */
  reason: string | null;
}

/** A file as the task JSON carries it once verifications are read: a file with its verification. */
export type VerifiedFileView = FileView & { verification: FileVerification | null };

/** The verification of an uploaded file not checked yet. */
const PENDING: FileVerification = {
  state: 'pending',
  checkedAt: null,
  size: null,
  sizeMatches: 'unknown',
  etag: null,
  checksum: null,
  reason: null,
};

/**
 * What one check of the storage found: the object (its size, ETag, checksum), or why not. `not_found` and
 * `forbidden` are the storage's own answers (404, 403); `unreachable` a network error, a time-out or a 5xx;
 * `unconfigured` no way to reach the storage of this appKey; `bad_url` a reported URL the setting cannot read.
 */
export type StorageAnswer =
  | { found: true; size: number | null; etag: string | null; checksum: string | null }
  | { found: false; why: 'not_found' | 'forbidden' | 'unreachable' | 'unconfigured' | 'bad_url'; message: string };

/** How a stored size compares with the size reported by the slice or end (null: none reported). */
function sizeMatchOf(reported: number | null, stored: number): SizeMatch {
  if (reported === null || !Number.isFinite(reported)) return 'unknown';
  return reported === stored ? 'matches' : 'differs';
}

/** The verification a storage answer gives a file that reported `reportedSize` (its slice's or end's). */
export function verdictOf(answer: StorageAnswer, reportedSize: number | null, checkedAt: number): FileVerification {
  const none = { size: null, sizeMatches: 'unknown' as const, etag: null, checksum: null };
  if (!answer.found) {
    const state = answer.why === 'not_found' ? 'missing' : 'unverifiable';
    return { state, checkedAt, ...none, reason: answer.message };
  }
  const seen = { size: answer.size, etag: answer.etag, checksum: answer.checksum };
  if (answer.size === null) {
    const reason = 'the storage holds the file but did not say its size';
    return { state: 'verified', checkedAt, ...seen, sizeMatches: 'unknown', reason };
  }
  const sizeMatches = sizeMatchOf(reportedSize, answer.size);
  if (answer.size === 0)
    return { state: 'empty', checkedAt, ...seen, sizeMatches, reason: 'the storage holds 0 bytes' };
  if (sizeMatches === 'differs') {
    const reason = `the storage holds ${answer.size} bytes, the platform reported a size of ${reportedSize}`;
    return { state: 'size_differs', checkedAt, ...seen, sizeMatches, reason };
  }
  return { state: 'verified', checkedAt, ...seen, sizeMatches, reason: null };
}

/**
 * A file's verification as read: none for a file not uploaded; a stored check for an uploaded one, else
 * pending. A check of an earlier upload of the file (its URL since replaced) still stands: the storage held
 * or lacked the file the platform named then, until a new check.
 */
export function verificationOf(file: FileView, stored: FileVerification | undefined): FileVerification | null {
  if (file.upload !== 'uploaded') return null;
  return stored ?? PENDING;
}

/**
 * Whether a task matches the read API's filter `verification=<state>`: it has a file in that state. Its checked
 * files are counted by state; `uploaded`, the header's count, tells the pending ones (uploaded, not checked).
 */
export function hasVerification(
  state: VerificationState,
  counts: Readonly<Partial<Record<CheckedState, number>>>,
  uploaded: number,
): boolean {
  if (state !== 'pending') return (counts[state] ?? 0) > 0;
  const checked = CHECKED_STATES.reduce((n, s) => n + (counts[s] ?? 0), 0);
  return uploaded > checked;
}

// The listings' filter (docs/api.md `verification=<state>`, `tasks list --verification`): a field of the store's
// query, declared here beside the states it takes.
declare module './task-store.ts' {
  interface TaskQuery {
    /** Only tasks with a file in this verification state (`pending`: uploaded, not checked yet). */
    verification?: VerificationState;
  }
}
