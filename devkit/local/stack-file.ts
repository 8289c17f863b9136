// `<cwd>/.data/stack.json`: how a running local stack tells the other commands started in the same folder
// where it listens. Written by the stack when it is ready, removed when it stops; a file left behind by a
// process that is gone (killed, crashed) does not count as a running stack.
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { StorageSettings } from '../../lib/config/storage-settings.ts';
import type { SignatureMode } from '../../lib/signature/verdicts.ts';

export const DATA_DIR = '.data';
export const STACK_FILE = 'stack.json';

/** What `callbacks dev` writes so that other commands in the same folder find it. */
export interface LocalStackInfo {
  pid: number;
  url: string;
  dynamoEndpoint: string;
  sqsEndpoint: string;
  region: string;
  tableName: string;
  queueUrl: string;
  dlqUrl: string;
  /** The task-events topic and the queue subscribed to it (absent in stack files of older versions). */
  eventsTopicArn?: string;
  eventsQueueUrl?: string;
  dataDir: string | null;
  startedAt: string;
  /** Where the stack's secrets come from (never the secrets): env CALLBACK_SECRETS, an option, or the demo key. */
  secretsSource?: 'option' | 'env' | 'default';
  /** The ingest's signature mode and allowed source ranges (empty: any), for `callbacks status`. */
  signatureMode?: SignatureMode;
  allowedSources?: string[];
  /**
   * The local storages the verifier checks files in (absent in stack files of older versions): the S3 emulator's
   * endpoint and the verifier's storage settings (which name no secret), for the sender emulator to store files.
   */
  storage?: { s3Endpoint: string; settings: StorageSettings };
  /**
   * The archive of raw callbacks (docs/archive.md): the bucket of fauxqs's S3 (at `sqsEndpoint`) the Firehose
   * stand-in writes to, and the prefix its partitions' folders are under, `raw/` (absent in stack files of older
   * versions).
   */
  archive?: { bucket: string; prefix: string };
}

export function stackFilePath(cwd = process.cwd()): string {
  return join(resolve(cwd), DATA_DIR, STACK_FILE);
}

/** The stack announced in `cwd`, if its process is still alive. */
export function readLocalStack(cwd?: string): LocalStackInfo | null {
  const file = stackFilePath(cwd);
  if (!existsSync(file)) return null;
  try {
    const info = JSON.parse(readFileSync(file, 'utf8')) as LocalStackInfo;
    // A stack file left by a process that is gone is not a running stack.
    try {
      process.kill(info.pid, 0);
    } catch {
      return null;
    }
    return info;
  } catch {
    return null;
  }
}

/** Written whole or not at all (a rename), so a reader never sees half a file. */
export async function writeStackFile(file: string, info: LocalStackInfo): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(info, null, 2)}\n`, 'utf8');
  await rename(tmp, file);
}

/** Removes the stack file only if it still announces this stack. */
export async function removeStackFile(file: string, info: LocalStackInfo): Promise<void> {
  try {
    const current = JSON.parse(await readFile(file, 'utf8')) as Partial<LocalStackInfo>;
    if (current.pid === info.pid && current.url === info.url) await rm(file, { force: true });
  } catch {
    // Already gone, or not ours to remove.
  }
}
