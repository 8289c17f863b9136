// The archive of the local stack (docs/archive.md): the template's Data Firehose stream, served by the stand-in of
// devkit/local/firehose.ts at an endpoint of its own, writing into its bucket in fauxqs's S3 under the stream's
// prefix, folder by folder as the stream's dynamic partitioning would. The worker reaches it with its own client,
// under its role: its PutRecordBatch is checked like any other call (devkit/local/iam/enforce.ts).
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { createFirehoseStandIn, type LocalStream } from './firehose.ts';
import { ResolvedTemplate, TemplateError } from './resolved-template.ts';
import { closeServer, listen, quietly } from './server-lifecycle.ts';
import { ensureBuckets } from './stack-storage.ts';

export interface LocalArchive {
  /** Where the stand-in takes Firehose's API: the worker's Firehose client goes there. */
  endpoint: string;
  stream: LocalStream;
}

/**
 * The template's archive stream: its name, its bucket, and the prefix before the folders of its partitions (the
 * fixed part of its S3 prefix, `raw/`); null for a template without one.
 */
function archiveStreamOf(t: ResolvedTemplate): LocalStream | null {
  const streams = t.resourcesOfType('AWS::KinesisFirehose::DeliveryStream');
  if (streams.length === 0) return null;
  if (streams.length > 1)
    throw new TemplateError(`the local stack runs one archive stream; the template has ${streams.length}`);
  const [logicalId, r] = streams[0]!;
  const destination = (r.Properties?.ExtendedS3DestinationConfiguration ?? {}) as Record<string, unknown>;
  const bucketId = ResolvedTemplate.target(destination.BucketARN);
  if (!bucketId || t.resource(bucketId).Type !== 'AWS::S3::Bucket')
    throw new TemplateError(`${logicalId}: its BucketARN is not a bucket of the template`);
  const fixed = String(t.value(destination.Prefix ?? '')).split('!{')[0]!;
  return { name: t.physical(logicalId).ref, bucket: t.physical(bucketId).ref, prefix: fixed.replace(/[^/]*$/, '') };
}

/**
 * Creates the bucket of the template's stream and starts the stand-in, closed by `resources` when the stack stops
 * (after the functions and pollers registered later, whose batches in hand still archive); null without a stream.
 */
export async function startLocalArchive(
  resources: AsyncDisposableStack,
  s3: S3Client,
  template: ResolvedTemplate,
): Promise<LocalArchive | null> {
  const stream = archiveStreamOf(template);
  if (!stream) return null;
  await ensureBuckets(s3, [stream.bucket]);
  const server = createFirehoseStandIn(s3, [stream]);
  resources.defer(quietly(() => closeServer(server, 5000)));
  const port = await listen(server, 0, '127.0.0.1');
  return { endpoint: `http://127.0.0.1:${port}`, stream };
}

/** Every line archived under `prefix` of `bucket`, as the objects hold them (every copy of a delivery). */
export async function archivedLines(s3: S3Client, bucket: string, prefix: string): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const { Key } of page.Contents ?? []) {
      const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key }));
      const text = gunzipSync(await object.Body!.transformToByteArray()).toString('utf8');
      for (const line of text.split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line));
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return lines;
}
