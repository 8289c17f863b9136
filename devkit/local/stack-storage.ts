// The storages of the local stack (docs/local-stack.md, "Storage"): the buckets the verifier's storage settings
// name, created in fauxqs' S3 when the stack starts, which the sender emulator fills with the files it reports
// uploaded (devkit/emulator/storage.ts). An object the emulator marks `emulated-access: denied` stands for one
// the storage's own policy refuses the verifier: the verifier's reads of it are answered 403, as S3 answers them.
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { parseStorageSettings, type StorageSettings } from '../../lib/config/storage-settings.ts';
import { DENIED_METADATA } from '../emulator/storage.ts';
import type { MiddlewareClient } from './sdk-middleware.ts';
import type { FunctionSettings } from './stack-template.ts';

/** The verifier's storage settings as the stack runs it (its environment, the shell's override included). */
export function localStorageSettings(functions: readonly FunctionSettings[], env: NodeJS.ProcessEnv): StorageSettings {
  const verifier = functions.find((fn) => fn.key === 'verifier');
  if (!verifier) return {};
  const own = env.STORAGE_SETTINGS;
  const text = own !== undefined && own.trim() !== '' ? own : (verifier.environment.STORAGE_SETTINGS ?? '{}');
  return parseStorageSettings(text);
}

/** The S3 buckets of the stage's account the settings name (the others are reached elsewhere). */
export function localBuckets(settings: StorageSettings): string[] {
  return [...new Set(Object.values(settings).flatMap((s) => (s.type === 's3' ? [s.bucket] : [])))].sort();
}

export async function ensureBuckets(s3: S3Client, buckets: readonly string[]): Promise<void> {
  for (const bucket of buckets) {
    try {
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    } catch (err) {
      // Kept from an earlier run of the stack.
      if (!/BucketAlready(Exists|OwnedByYou)/.test(String((err as Error).name))) throw err;
    }
  }
}

/** S3's refusal of a read, as the SDK reports it. */
class AccessDenied extends Error {
  override readonly name = 'AccessDenied';
  readonly $fault = 'client';
  readonly $metadata = { httpStatusCode: 403 };
}

/** Makes a function's S3 client answer 403 for the objects the emulator marked as refused to it. */
export function enforceStoredAccess(client: object): void {
  (client as MiddlewareClient).middlewareStack.add(
    (next, context) => async (args) => {
      const result = (await next(args)) as { output?: { Metadata?: Record<string, string> } };
      const command = String(context.commandName ?? '');
      if (/^(HeadObject|GetObject)Command$/.test(command)) {
        if (result.output?.Metadata?.[DENIED_METADATA.key] === DENIED_METADATA.value)
          throw new AccessDenied('Access Denied');
      }
      return result;
    },
    { step: 'initialize', name: 'localStoredAccess' },
  );
}
