// The storage the sender emulator uploads to when it sends to a local stack (`callbacks emulate`, `send
// --lifecycle`): that stack's S3 emulator and the verifier's settings, as its stack file names them
// (devkit/emulator/storage.ts stores the files; docs/verification.md). A deployed stage's storage is the team's
// own: nothing is stored there, and its verifier checks what the platform really uploaded.
import { S3Client } from '@aws-sdk/client-s3';
import { InvalidArgumentError } from 'commander';
import { DEFAULT_STORAGE_FAULT_RATE, STORAGE_FAULT_KINDS, type StorageFaultKind } from '../devkit/emulator/storage.ts';
import type { StorageOutage } from '../devkit/emulator/storage-outage.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../devkit/local/deployed-settings.ts';
import { parseDuration } from './format.ts';
import type { LocalStackInfo } from '../devkit/local/stack-file.ts';
import type { StorageSettings } from '../lib/config/storage-settings.ts';
import { CliError } from './inspect.ts';

/** `--storage-faults missing,empty,truncated,forbidden`: the kinds, each once. */
export function storageFaults(text: string): StorageFaultKind[] {
  const kinds = text
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  const unknown = kinds.filter((k) => !(STORAGE_FAULT_KINDS as readonly string[]).includes(k));
  if (kinds.length === 0 || unknown.length > 0)
    throw new InvalidArgumentError(`a comma-separated list of ${STORAGE_FAULT_KINDS.join(', ')} is needed.`);
  return [...new Set(kinds)] as StorageFaultKind[];
}

/** `--storage-outage 5m,40m`: when the outage begins after the run's start (platform time), and how long it lasts. */
export function storageOutage(text: string): StorageOutage {
  const [start, length, ...rest] = text.split(',').map((t) => parseDuration(t.trim()));
  if (
    rest.length > 0 ||
    start === null ||
    start === undefined ||
    length === null ||
    length === undefined ||
    length <= 0
  )
    throw new InvalidArgumentError(
      'a start and a length are needed, such as 5m,40m (after the run begins, for how long).',
    );
  return { startMs: start, lengthMs: length };
}

export interface FileStorageOptions {
  storageFaults?: StorageFaultKind[];
  storageFaultRate?: number;
  /** false: `--no-store-files`. */
  storeFiles?: boolean;
}

/** The local stack's storage to put the run's files in, or null when the run stores none. */
export function localFileStorage(
  local: LocalStackInfo | null,
  opts: FileStorageOptions,
): { s3: S3Client; settings: StorageSettings; faults: StorageFaultKind[]; rate: number } | null {
  const faults = opts.storageFaults ?? [];
  if (opts.storeFiles === false) {
    if (faults.length) throw new CliError('--storage-faults needs the files stored: leave out --no-store-files');
    return null;
  }
  if (!local?.storage) {
    if (faults.length)
      throw new CliError(
        '--storage-faults needs the storage of a local stack (the receiver is not one, or its stack file is older)',
      );
    return null;
  }
  const s3 = new S3Client({
    endpoint: local.storage.s3Endpoint,
    forcePathStyle: true,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
  return { s3, settings: local.storage.settings, faults, rate: opts.storageFaultRate ?? DEFAULT_STORAGE_FAULT_RATE };
}
