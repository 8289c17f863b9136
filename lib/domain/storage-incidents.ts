// Storage incidents (docs/verification.md, "Storage incidents"): the failed uploads of one appKey's storage (one
// bucket or host) seen together as one problem with a deadline, rather than as unrelated failures. The platform
// holds a file it could not upload and retries it every 10 s for 24 hours, then deletes it; a new storage
// configuration takes up to 30 minutes to apply. So an incident says which file failed first, how many files
// are affected, the earliest moment the platform deletes one of them, and the moment a switch of storage must
// be made by to save it: that purge less 30 minutes. Pure: no AWS import.
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical.ts';
import { STORAGE_CHANGE_DELAY_MS } from './deadlines.ts';
import type { Service } from '../platform/services.ts';

/** A file whose upload to the storage failed, as its failure event reported it. */
export interface FailedUpload {
  service: Service;
  taskId: string;
  fileName: string;
  /** The file's first failed upload (platform time). */
  at: number;
  /** When the platform deletes the file unless an upload succeeds: its first failure + 24 h. */
  purgeAt: number;
}

/** What the failures of an incident add up to. */
export interface IncidentFacts {
  firstFailure: FailedUpload;
  filesAffected: number;
  earliestPurgeAt: number;
  /** The last moment any of the files can still be uploaded: once past, each is uploaded or lost. */
  latestPurgeAt: number;
}

/** How the storage answered a probe: it works, refuses, lacks the bucket, does not answer, or answers too slowly. */
const PROBE_RESULTS = ['ok', 'forbidden', 'not_found', 'unreachable', 'slow'] as const;
export type ProbeResultKind = (typeof PROBE_RESULTS)[number];

export interface ProbeResult {
  result: ProbeResultKind;
  /** The provider's message, or what was done (`bucket reachable, canary written, read back and deleted`). */
  message: string;
  /** When the probe ran (receiver's clock) and how long it took. */
  at: number;
  ms: number;
}

/** An incident as `callbacks storage status` and the storage events report it. */
export interface StorageIncident {
  /** `<storage>@<first failure of its window>`: the same for every report of one incident. */
  id: string;
  appKey: string;
  /** `s3://bucket`, `s3://endpoint/bucket`, `https://host`, or `appKey <appKey>` when nothing names it. */
  storage: string;
  firstFailure: FailedUpload;
  filesAffected: number;
  earliestPurgeAt: number;
  /** earliestPurgeAt less the 30 minutes a new storage configuration takes to apply. */
  switchBy: number;
  /** Receiver's clock. */
  openedAt: number;
  resolvedAt: number | null;
  /** Why it was resolved: uploads to the storage succeed again, or every file is uploaded or lost. */
  resolution: 'uploads_succeed' | 'files_uploaded_or_lost' | null;
  /** The latest probe of the storage, where its setting allows one. */
  probe: ProbeResult | null;
}

const STORAGE_EVENT_TYPES = ['storage.incident_opened', 'storage.incident_resolved'] as const;
export type StorageEventType = (typeof STORAGE_EVENT_TYPES)[number];

/** The published body of a storage event, version 1 (docs/events.md). It concerns a storage, not a task. */
export interface StorageEvent {
  version: 1;
  id: string;
  type: StorageEventType;
  /** When it was found (receiver's clock): the sweep that opened or resolved the incident. */
  occurredAt: number;
  incident: StorageIncident;
}

/** When a switch of storage must be made by, for a file the platform deletes at `purgeAt`. */
export const switchByOf = (purgeAt: number): number => purgeAt - STORAGE_CHANGE_DELAY_MS;

/** The facts of an incident's failures: the first (then by task and file), how many, the purges. */
export function incidentFacts(failures: readonly FailedUpload[]): IncidentFacts | null {
  if (failures.length === 0) return null;
  const key = (f: FailedUpload) => `${String(f.at).padStart(16, '0')}#${f.taskId}#${f.fileName}`;
  const distinct = new Map(failures.map((f) => [`${f.taskId}#${f.fileName}`, f]));
  const files = [...distinct.values()];
  const firstFailure = files.reduce((a, b) => (key(b) < key(a) ? b : a));
  return {
    firstFailure,
    filesAffected: files.length,
    earliestPurgeAt: Math.min(...files.map((f) => f.purgeAt)),
    latestPurgeAt: Math.max(...files.map((f) => f.purgeAt)),
  };
}

/** The id of an incident: its storage and the first failure of its window. */
export const incidentIdOf = (storage: string, windowStart: number): string => `${storage}@${windowStart}`;

/** The id of a storage event: 128 bits of SHA-256 over its appKey, incident and type, as 32 hex characters. */
function storageEventId(appKey: string, incidentId: string, type: StorageEventType): string {
  const identity = canonicalJson(['storage-event', 1, appKey, incidentId, type]);
  return createHash('sha256').update(identity, 'utf8').digest('hex').slice(0, 32);
}

export function storageEvent(type: StorageEventType, incident: StorageIncident, occurredAt: number): StorageEvent {
  return { version: 1, id: storageEventId(incident.appKey, incident.id, type), type, occurredAt, incident };
}

/**
 * What a sweep at `now` does with a storage's window of failures: open an incident once its uploads have been failing
 * for `after` (its first failure that long ago and no success since, or its failures spanning that long; 0: the first
 * sweep that finds a failure opens one), resolve an open one once uploads succeed again (a success later than its
 * latest failure) or every file is uploaded or lost; a window that recovered sooner is cleared without an incident.
 */
export function incidentStep(w: {
  now: number;
  open: boolean;
  windowStart: number;
  latestFailure: number;
  latestSuccess: number | null;
  /** Every affected file is uploaded or past its purge (lost). */
  allSettled: boolean;
  after: number;
}): { open: boolean; resolve: NonNullable<StorageIncident['resolution']> | null; clear: boolean } {
  const recovered = w.latestSuccess !== null && w.latestSuccess > w.latestFailure;
  const lasting = !recovered && w.now - w.windowStart >= w.after;
  const open = w.open || lasting || w.latestFailure - w.windowStart >= w.after;
  if (!open) return { open: false, resolve: null, clear: recovered || w.allSettled };
  return {
    open: true,
    resolve: recovered ? 'uploads_succeed' : w.allSettled ? 'files_uploaded_or_lost' : null,
    clear: false,
  };
}
