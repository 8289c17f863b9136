// The storage the platform uploads to, as the sender emulator plays it: each file a run reports uploaded is put
// in the local stack's S3 (fauxqs) just before its successful upload callback goes out, at the key the
// verifier's setting derives from its URL, with the bytes its slice or end reported (a screenshot's image: a
// size drawn from its name). Storage faults leave a file reported uploaded otherwise than reported: `missing`
// (never stored), `empty` (0 bytes), `truncated` (half its bytes: recordings, whose size is reported) and
// `forbidden` (stored, marked so that the local S3 refuses the verifier: devkit/local/stack-storage.ts). What
// the verifier must find of each file is written to the expect file, for `callbacks verify`.
import { createHash } from 'node:crypto';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { StorageSettings } from '../../lib/config/storage-settings.ts';
import { objectKeyOf } from '../../lib/aws/storage/object-key.ts';
import type { CheckedState } from '../../lib/domain/verification.ts';
import type { Service } from '../../lib/platform/services.ts';
import type { ScheduledSend } from './lifecycles.ts';
import { createRandom } from './random.ts';

export const STORAGE_FAULT_KINDS = ['missing', 'empty', 'truncated', 'forbidden'] as const;
export type StorageFaultKind = (typeof STORAGE_FAULT_KINDS)[number];

/**
 * The metadata of an object the storage refuses the verifier (a bucket policy, an object ACL): the local stack's S3
 * answers the verifier's reads of it 403 (devkit/local/stack-storage.ts).
 */
export const DENIED_METADATA = { key: 'emulated-access', value: 'denied' } as const;

/**
 * File sizes a run reports are divided by this when its files are stored: the S3 emulator keeps them in memory, and
 * an hour of video becomes some kilobytes.
 */
export const STORED_SIZE_DIVISOR = 100_000;

/** The share of the files reported uploaded that a run with storage faults leaves faulted, by default. */
export const DEFAULT_STORAGE_FAULT_RATE = 0.05;

/** What the verifier finds of a file each fault leaves (and of a healthy one). */
const STATE_OF_FAULT: Record<StorageFaultKind | 'none', CheckedState> = {
  none: 'verified',
  missing: 'missing',
  empty: 'empty',
  truncated: 'size_differs',
  forbidden: 'unverifiable',
};

/** A file the run reports uploaded, what the storage holds of it, and what its check must find. */
export interface StoredFile {
  service: Service;
  appKey: string;
  taskId: string;
  fileName: string;
  /** The URL its successful upload reports. */
  url: string;
  /** The size its slice or end reported (recordings), null for an image. */
  reportedSize: number | null;
  /** Bytes the storage holds (0 when missing or empty). */
  bytes: number;
  fault: StorageFaultKind | null;
  /** What its check must find: with no storage setting for its appKey, `unverifiable`. */
  expected: CheckedState;
}

export interface StoragePlanOptions {
  /** The fault kinds drawn from (none: every file stored as reported). */
  faults: readonly StorageFaultKind[];
  /** The share of files faulted. */
  rate: number;
  seed: string;
  /** The local storage settings: an appKey without an S3 setting has its files unverifiable. */
  settings: StorageSettings;
}

/** Whether a body reports a file uploaded (a screenshot's by its fileState, docs/platform-callbacks.md §7). */
export const isSuccessfulUpload = (body: Record<string, unknown>): boolean => {
  if (body.type !== 4) return false;
  const output = body.output as { fileState?: unknown } | undefined;
  return typeof body.imageId === 'string' ? output?.fileState === '10000' : body.code === 200;
};

/** A believable image size (1 to 4 KiB once scaled), the same for the same name. */
const imageBytes = (fileName: string) => 1024 + (createHash('sha256').update(fileName).digest().readUInt16BE(0) % 3072);

/** The files a run's sends report uploaded, in a fixed order, with the faults drawn for them. */
export function planStoredFiles(sends: readonly ScheduledSend[], o: StoragePlanOptions): StoredFile[] {
  const files = new Map<string, StoredFile & { sizeAt: number }>();
  const keyOf = (s: ScheduledSend, fileName: string) => JSON.stringify([s.service, s.body.appKey, s.taskId, fileName]);
  for (const s of sends) {
    const output = s.body.output as { fileName?: string; fileUrl?: string; fileSize?: unknown } | undefined;
    if (!output?.fileName) continue;
    const key = keyOf(s, output.fileName);
    let file = files.get(key);
    if (isSuccessfulUpload(s.body) && !file) {
      file = {
        service: s.service,
        appKey: String(s.body.appKey),
        taskId: s.taskId,
        fileName: output.fileName,
        url: String(output.fileUrl ?? ''),
        reportedSize: null,
        bytes: 0,
        fault: null,
        expected: 'verified',
        sizeAt: -1,
      };
      files.set(key, file);
    }
  }
  // The size a file's latest slice or end reported (the receiver keeps the latest).
  for (const s of sends) {
    const output = s.body.output as { fileName?: string; fileSize?: unknown } | undefined;
    if ((s.body.type !== 2 && s.body.type !== 3) || !output?.fileName || typeof output.fileSize !== 'number') continue;
    const file = files.get(keyOf(s, output.fileName));
    const at = s.body.timestamp as number;
    if (file && at > file.sizeAt) {
      file.reportedSize = output.fileSize;
      file.sizeAt = at;
    }
  }
  const rng = createRandom(`${o.seed}/storage`);
  const ordered = [...files.values()].sort((a, b) => (a.taskId + a.fileName < b.taskId + b.fileName ? -1 : 1));
  const given = new Map<StorageFaultKind, number>(o.faults.map((k) => [k, 0]));
  return ordered.map(({ sizeAt: _at, ...file }) => {
    const bytes = file.reportedSize ?? imageBytes(file.fileName);
    // A truncated file shows only where a size was reported to compare with. Each fault goes to the kind given
    // least so far that the file can take, so that a run of few files still has every kind asked for.
    const kinds = o.faults.filter((k) => k !== 'truncated' || (file.reportedSize ?? 0) >= 2);
    const fewest = [...kinds].sort((a, b) => given.get(a)! - given.get(b)!)[0];
    const fault = fewest !== undefined && rng.chance(o.rate) ? fewest : null;
    if (fault) given.set(fault, given.get(fault)! + 1);
    const stored = fault === 'missing' || fault === 'empty' ? 0 : fault === 'truncated' ? Math.floor(bytes / 2) : bytes;
    const setting = o.settings[file.appKey];
    const expected = setting?.type === 's3' ? STATE_OF_FAULT[fault ?? 'none'] : 'unverifiable';
    return { ...file, bytes: stored, fault, expected };
  });
}

/** Puts each planned file in its bucket once, as its first successful upload is about to be reported. */
export class EmulatedStorage {
  private readonly s3: S3Client;
  private readonly settings: StorageSettings;
  private readonly files = new Map<string, StoredFile>();
  private readonly stored = new Set<string>();

  constructor(s3: S3Client, settings: StorageSettings, files: readonly StoredFile[]) {
    this.s3 = s3;
    this.settings = settings;
    for (const f of files) this.files.set(JSON.stringify([f.appKey, f.taskId, f.fileName]), f);
  }

  /** For the sender: called before each send. */
  async beforeSend(send: ScheduledSend): Promise<void> {
    if (!isSuccessfulUpload(send.body)) return;
    const fileName = (send.body.output as { fileName: string }).fileName;
    const id = JSON.stringify([send.body.appKey, send.taskId, fileName]);
    const file = this.files.get(id);
    if (!file || this.stored.has(id)) return;
    this.stored.add(id);
    const setting = this.settings[file.appKey];
    if (file.fault === 'missing' || setting?.type !== 's3') return;
    const located = objectKeyOf(setting, file.fileName, file.url);
    if ('error' in located) return;
    await this.s3.send(
      new PutObjectCommand({
        Bucket: setting.bucket,
        Key: located.key,
        Body: Buffer.alloc(file.bytes),
        ...(file.fault === 'forbidden' ? { Metadata: { [DENIED_METADATA.key]: DENIED_METADATA.value } } : {}),
      }),
    );
  }
}
