// A stand-in for Data Firehose Direct PUT on the local stack (no emulator has one): an HTTP server taking
// PutRecordBatch and PutRecord in Firehose's JSON protocol, for the streams the template declares, and writing what
// it takes the way the template's stream does: each record's `partition` (its dynamic partitioning's keys, read as
// its JQ query reads them) names its folder, and the records of one folder become one gzip-compressed object of
// JSON Lines in fauxqs's S3. Firehose buffers for a minute or so before it writes; the stand-in writes every call
// at once, so that what the worker archived can be queried as soon as its batch is done. The worker's call is
// checked against its role before it leaves the worker (devkit/local/iam/enforce.ts); the stand-in writes as
// the stream's own role would, with the stack's client.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { gzipSync } from 'node:zlib';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';

export interface LocalStream {
  name: string;
  bucket: string;
  /** The S3 prefix before the partition's folders (`raw/`). */
  prefix: string;
}

/** The folder of one record, read as the stream's JQ query reads it; null when the record has none. */
function folderOf(data: Buffer): string | null {
  let partition: unknown;
  try {
    partition = (JSON.parse(data.toString('utf8')) as { partition?: unknown }).partition;
  } catch {
    return null;
  }
  if (typeof partition !== 'object' || partition === null) return null;
  const { service, dt, appKey } = partition as Record<string, unknown>;
  if (![service, dt, appKey].every((v) => typeof v === 'string' && v !== '' && !v.includes('/'))) return null;
  return `service=${service}/dt=${dt}/appKey=${appKey}/`;
}

/** The name Firehose gives an object: the stream, the time it was written, a unique id. */
function objectName(stream: string, at: Date): string {
  const stamp = at.toISOString().slice(0, 19).replace(/[T:]/g, '-');
  return `${stream}-1-${stamp}-${randomUUID()}.gz`;
}

/**
 * Writes one call's records: per folder, one object. A record without a partition goes where Firehose puts what
 * its dynamic partitioning cannot read (`errors/`), as Firehose does, and counts as delivered.
 */
async function deliver(s3: S3Client, stream: LocalStream, records: readonly Buffer[], at = new Date()) {
  const byFolder = new Map<string, Buffer[]>();
  for (const data of records) {
    const folder = folderOf(data) ?? 'errors/';
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), data]);
  }
  for (const [folder, datas] of byFolder)
    await s3.send(
      new PutObjectCommand({
        Bucket: stream.bucket,
        Key: `${stream.prefix}${folder}${objectName(stream.name, at)}`,
        Body: gzipSync(Buffer.concat(datas)),
        ContentEncoding: 'gzip',
      }),
    );
}

/** Firehose's error answer. */
function failure(type: string, message: string, status = 400) {
  return { status, body: { __type: type, message } };
}

/** One call of Firehose's JSON protocol (X-Amz-Target `Firehose_20150804.<operation>`). */
async function answer(s3: S3Client, streams: readonly LocalStream[], target: string, input: Record<string, unknown>) {
  const operation = target.replace(/^Firehose_20150804\./, '');
  if (operation !== 'PutRecordBatch' && operation !== 'PutRecord')
    return failure('InvalidArgumentException', `${operation} is not served by the local stand-in`);
  const stream = streams.find((s) => s.name === input.DeliveryStreamName);
  if (!stream) return failure('ResourceNotFoundException', `Firehose ${String(input.DeliveryStreamName)} not found.`);
  const entries = operation === 'PutRecord' ? [input.Record] : input.Records;
  if (!Array.isArray(entries) || entries.length === 0 || entries.length > 500)
    return failure('InvalidArgumentException', 'Records must hold 1 to 500 records.');
  const datas = entries.map((e) => Buffer.from(String((e as { Data?: unknown })?.Data ?? ''), 'base64'));
  try {
    await deliver(s3, stream, datas);
  } catch (err) {
    return failure('ServiceUnavailableException', `the stand-in could not write to S3: ${(err as Error).message}`, 503);
  }
  if (operation === 'PutRecord') return { status: 200, body: { RecordId: randomUUID(), Encrypted: false } };
  return {
    status: 200,
    body: { FailedPutCount: 0, Encrypted: false, RequestResponses: datas.map(() => ({ RecordId: randomUUID() })) },
  };
}

/** The stand-in's server, not yet listening: requests for `streams`, written with `s3`. */
export function createFirehoseStandIn(s3: S3Client, streams: readonly LocalStream[]): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        let input: Record<string, unknown> = {};
        try {
          input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
        } catch {
          input = {};
        }
        const out = await answer(s3, streams, String(req.headers['x-amz-target'] ?? ''), input);
        res.writeHead(out.status, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify(out.body));
      })();
    });
  });
}
