// A probe of a storage itself, where its owner allowed one (`probe: true` in its setting): the bucket reachable
// (HeadBucket), a small canary object written under PROBE_PREFIX, read back and deleted. Its result says what an
// incident's files meet there: `ok`, `forbidden` (403), `not_found` (no such bucket), `unreachable` (no answer, a
// 5xx), or `slow` (every step answered, together slower than SLOW_PROBE_MS), with the provider's message.
import { randomUUID } from 'node:crypto';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { PROBE_PREFIX, type S3CompatibleSetting, type S3Setting } from '../../config/storage-settings.ts';
import type { ProbeResult, ProbeResultKind } from '../../domain/storage-incidents.ts';
import { errorSentence } from '../../text.ts';

/** A probe whose steps together take longer than this is `slow`: uploads of large files would time out there. */
const SLOW_PROBE_MS = 3000;

const CANARY = 'rtc-callbacks-receiver probe: written, read back and deleted by the verifier\n';

/** What an S3 error says of the storage. */
function kindOf(err: unknown): ProbeResultKind {
  const name = String((err as { name?: unknown } | null)?.name ?? '');
  const status = (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
  if (status === 401 || status === 403 || /AccessDenied|Forbidden|InvalidAccessKeyId|SignatureDoesNotMatch/.test(name))
    return 'forbidden';
  if (status === 404 || /^(NotFound|NoSuchBucket)$/.test(name)) return 'not_found';
  return 'unreachable';
}

export async function probeStorage(
  client: S3Client,
  setting: S3Setting | S3CompatibleSetting,
  now: () => number = Date.now,
): Promise<ProbeResult> {
  const at = now();
  const started = performance.now();
  const key = `${setting.prefix ?? ''}${PROBE_PREFIX}${at}-${randomUUID()}`;
  let step = 'the bucket';
  const done = (result: ProbeResultKind, message: string): ProbeResult => ({
    result,
    message,
    at,
    ms: Math.round(performance.now() - started),
  });
  try {
    await client.send(new HeadBucketCommand({ Bucket: setting.bucket }));
    step = 'writing the canary';
    await client.send(new PutObjectCommand({ Bucket: setting.bucket, Key: key, Body: CANARY }));
    step = 'reading the canary back';
    const read = await client.send(new GetObjectCommand({ Bucket: setting.bucket, Key: key }));
    const body = (await read.Body?.transformToString()) ?? '';
    step = 'deleting the canary';
    await client.send(new DeleteObjectCommand({ Bucket: setting.bucket, Key: key }));
    if (body !== CANARY) return done('unreachable', 'the canary read back is not the one written');
  } catch (err) {
    return done(kindOf(err), `${step}: ${errorSentence(err)}`);
  }
  const result = done('ok', 'bucket reachable, canary written, read back and deleted');
  return result.ms > SLOW_PROBE_MS
    ? { ...result, result: 'slow', message: `${result.message} in ${result.ms} ms` }
    : result;
}
