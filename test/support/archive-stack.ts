// A local stack whose worker archives every callback it stores, for the tests of `callbacks archive query` and
// `callbacks replay`. A stack whose template gives the worker its ARCHIVE_STREAM, and whose stack file names its
// archive, is used as it starts. Otherwise the archive is set up here the way the deployed stack has it: the
// Firehose stand-in (devkit/local/firehose.ts) writing into a bucket of the stack's S3, the worker given the
// stream (its template's environment, and a grant of its role for it) and sent to the stand-in (the SDK's own
// AWS_ENDPOINT_URL_FIREHOSE, read when the worker first calls Firehose), and the stack file given `archive`.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { gzipSync } from 'node:zlib';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { type ArchiveLocation, archiveOf } from '../../cli/archive-query.ts';
import { LOCAL_CREDENTIALS, LOCAL_STAGE, SERVICE } from '../../devkit/local/deployed-settings.ts';
import { createFirehoseStandIn } from '../../devkit/local/firehose.ts';
import type { PolicyStatement } from '../../devkit/local/iam/policy.ts';
import { closeServer, listen } from '../../devkit/local/server-lifecycle.ts';
import { startLocalStack, type LocalStack } from '../../devkit/local/stack.ts';
import type { LocalStackOptions } from '../../devkit/local/stack-options.ts';
import { writeStackFile } from '../../devkit/local/stack-file.ts';
import { loadTemplate, type Template } from '../../devkit/local/template.ts';
import type { ArchiveLine } from '../../lib/domain/archive.ts';

export const ARCHIVE_STREAM = `${SERVICE}-${LOCAL_STAGE}-archive`;
const ARCHIVE_BUCKET = `${SERVICE}-${LOCAL_STAGE}-archive-test`;

export interface ArchivingStack {
  stack: LocalStack;
  archive: ArchiveLocation;
  /** A client of the stack's S3. */
  s3: S3Client;
  /**
   * Stores lines in the archive as its stream does (one gzip object of JSON Lines per partition): callbacks the
   * archive holds that the table does not (a table restored from a backup older than they are).
   */
  archiveLines(lines: readonly ArchiveLine[]): Promise<void>;
  stop(): Promise<void>;
}

async function putLines(s3: S3Client, archive: ArchiveLocation, lines: readonly ArchiveLine[]): Promise<void> {
  const byFolder = new Map<string, ArchiveLine[]>();
  for (const line of lines) {
    const { service, dt, appKey } = line.partition;
    const folder = `${archive.prefix}service=${service}/dt=${dt}/appKey=${appKey}/`;
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), line]);
  }
  for (const [folder, held] of byFolder)
    await s3.send(
      new PutObjectCommand({
        Bucket: archive.bucket,
        Key: `${folder}test-${randomUUID()}.gz`,
        Body: gzipSync(held.map((line) => `${JSON.stringify(line)}\n`).join('')),
      }),
    );
}

const workerEnvironment = (template: Template) =>
  (template.Resources.WorkerLambdaFunction!.Properties!.Environment as { Variables: Record<string, unknown> })
    .Variables;

/** The template with the worker archiving to ARCHIVE_STREAM, under a grant of its role to put records there. */
function archivingTemplate(): Template {
  const template = structuredClone(loadTemplate().template);
  workerEnvironment(template).ARCHIVE_STREAM = ARCHIVE_STREAM;
  const policies = template.Resources.WorkerRole!.Properties!.Policies as Array<{
    PolicyDocument: { Statement: PolicyStatement[] };
  }>;
  policies[0]!.PolicyDocument.Statement.push({
    Sid: 'ArchiveCallbacks',
    Effect: 'Allow',
    Action: 'firehose:PutRecordBatch',
    Resource: '*',
  });
  return template;
}

export async function startArchivingStack(opts: LocalStackOptions): Promise<ArchivingStack> {
  const wired = workerEnvironment(loadTemplate().template).ARCHIVE_STREAM !== undefined;
  if (wired) {
    const stack = await startLocalStack(opts);
    const archive = archiveOf(stack.info);
    if (!archive) throw new Error('the stack archives, but its stack file names no archive');
    const s3 = clientOf(stack);
    return {
      stack,
      archive,
      s3,
      archiveLines: (lines) => putLines(s3, archive, lines),
      stop: async () => {
        s3.destroy();
        await stack.stop();
      },
    };
  }
  // The stand-in listens before the stack starts (the worker is sent to it); it writes once the stack's S3 is up.
  let standIn: Server | undefined;
  const front = createServer((req, res) => void standIn!.emit('request', req, res));
  const port = await listen(front, 0, '127.0.0.1');
  const previous = process.env.AWS_ENDPOINT_URL_FIREHOSE;
  process.env.AWS_ENDPOINT_URL_FIREHOSE = `http://127.0.0.1:${port}`;
  const restore = () => {
    if (previous === undefined) delete process.env.AWS_ENDPOINT_URL_FIREHOSE;
    else process.env.AWS_ENDPOINT_URL_FIREHOSE = previous;
  };
  let stack: LocalStack;
  try {
    stack = await startLocalStack({ ...opts, template: archivingTemplate() });
  } catch (err) {
    restore();
    await closeServer(front, 1000);
    throw err;
  }
  const s3 = clientOf(stack);
  const archive: ArchiveLocation = { bucket: ARCHIVE_BUCKET, prefix: 'raw/' };
  await s3.send(new CreateBucketCommand({ Bucket: archive.bucket }));
  standIn = createFirehoseStandIn(s3, [{ name: ARCHIVE_STREAM, ...archive }]);
  await writeStackFile(stack.stackFile, { ...stack.info, archive } as typeof stack.info);
  return {
    stack,
    archive,
    s3,
    archiveLines: (lines) => putLines(s3, archive, lines),
    stop: async () => {
      await stack.stop();
      s3.destroy();
      await closeServer(front, 1000);
      restore();
    },
  };
}

function clientOf(stack: LocalStack): S3Client {
  return new S3Client({
    endpoint: stack.info.sqsEndpoint,
    region: stack.info.region,
    credentials: LOCAL_CREDENTIALS,
    forcePathStyle: true,
  });
}
