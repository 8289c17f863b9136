// The whole receiver in one process, for development and end-to-end tests: DynamoDB (dynalite) and SQS/SNS
// (fauxqs) emulators with the table, the queues and the task-events topic the deployed stack has (plus a
// queue subscribed to the topic, for `callbacks events tail`), an HTTP server standing in for API Gateway
// in front of the deployed ingest and read API handlers (the read API for loopback clients only, without
// authorization), and pollers standing in for the SQS event source mapping in front of the deployed
// worker handler.
//
// Data lives under `<dataDir>/dynamodb` (dynalite's LevelDB) and `<dataDir>/sqs` (fauxqs' SQLite), so a
// restart finds the tasks and also every callback that was acknowledged but not yet applied, and the
// dead-letter queue; with `memory` nothing is written. `<cwd>/.data/stack.json` tells the other CLI
// commands where the stack listens; it is removed when the stack stops.
import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SQSClient,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { SNSClient } from '@aws-sdk/client-sns';
import type { FauxqsServer } from 'fauxqs';
import { tableDefinition } from '../aws/dynamo/table.ts';
import { ensureEventsTopicAndQueue } from '../aws/sqs/event-queue.ts';
import { readIngestSettings } from '../ingest/config.ts';
import { parseSecrets } from '../ingest/secrets.ts';
import { createLogger, setLogSink, type LogSink } from '../log.ts';
import { parseSignatureMode, type SignatureMode, SIGNATURE_MODES_IN_WORDS } from '../queue-message.ts';
import {
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  LOCAL_STAGE,
  eventSourceMapping,
  queueSettings,
  resourceNames,
} from './deployed-settings.ts';
import { DEFAULT_SECRETS } from './demo-secrets.ts';
import { createDynalite } from './dynamo.ts';
import { loadDeployedHandlers, type DeployedHandlers } from './handlers.ts';
import { startLocalSqs } from './fauxqs.ts';
import { createGateway } from './http-gateway.ts';
import { parseAllowList } from '../ingest/source-ip.ts';
import { startSqsPoller, type PollerStats, type SqsPoller } from './sqs-poller.ts';
import {
  DATA_DIR,
  type LocalStackInfo,
  readLocalStack,
  removeStackFile,
  stackFilePath,
  writeStackFile,
} from './stack-file.ts';

export { DEFAULT_SECRETS };
/** Seconds before a failed record is retried locally (deployed: the queue's 180 s visibility time-out). */
export const DEFAULT_RETRY_DELAY_S = 10;

export interface LocalStackOptions {
  /** HTTP port of the callback routes; 0 picks a free one. */
  port?: number;
  /** Address of the callback routes (default 127.0.0.1). The emulators listen on 127.0.0.1 whatever it is. */
  host?: string;
  /** Keep nothing on disk. */
  memory?: boolean;
  /** Where the data lives, relative to `cwd`. */
  dataDir?: string;
  /** The folder whose `.data/stack.json` announces the stack (default: the current directory). */
  cwd?: string;
  /** appKey -> secrets; default: env CALLBACK_SECRETS, else DEFAULT_SECRETS. */
  secrets?: Record<string, readonly string[]>;
  /** Default: env SIGNATURE_MODE, else enforce. */
  signatureMode?: SignatureMode;
  /** Source ranges allowed to post callbacks (ALLOWED_SOURCE_CIDRS); default: that env variable, else any. */
  allowedSourceCidrs?: readonly string[];
  /** Silences the JSON log lines of the handlers and the poller while the stack runs. */
  quiet?: boolean;
  /** See SqsPollerOptions.retryDelaySeconds; default DEFAULT_RETRY_DELAY_S. */
  retryDelaySeconds?: number;
  /** Emulator ports (default: free ones). A restart in the same process must reuse them: see handlers.ts. */
  dynamoPort?: number;
  sqsPort?: number;
  /** Where CALLBACK_SECRETS and SIGNATURE_MODE are read from (default process.env). */
  env?: NodeJS.ProcessEnv;
}

export interface LocalStack {
  /** Base URL of the callback routes, with the real port. */
  url: string;
  info: LocalStackInfo;
  stackFile: string;
  signatureMode: SignatureMode;
  /** The source ranges allowed, normalised; empty when every address is. */
  allowedSources: readonly string[];
  /** The appKeys that have a secret (never the secrets). */
  appKeys: string[];
  /** Where the secrets came from: the `secrets` option, env CALLBACK_SECRETS, or DEFAULT_SECRETS. */
  secretsSource: 'option' | 'env' | 'default';
  poller: { stats: Readonly<PollerStats>; busy(): number };
  stop(): Promise<void>;
}

function resolveSecrets(
  opts: LocalStackOptions,
  env: NodeJS.ProcessEnv,
): { json: string; appKeys: string[]; source: LocalStack['secretsSource'] } {
  let json: string;
  let source: LocalStack['secretsSource'];
  if (opts.secrets) {
    json = JSON.stringify(opts.secrets);
    source = 'option';
  } else if (env.CALLBACK_SECRETS !== undefined && env.CALLBACK_SECRETS.trim() !== '') {
    json = env.CALLBACK_SECRETS;
    source = 'env';
  } else {
    json = JSON.stringify(DEFAULT_SECRETS);
    source = 'default';
  }
  // Refuse to start on unusable secrets rather than answer every callback 503. The error names no secret.
  const parsed = parseSecrets(json, source === 'env' ? 'CALLBACK_SECRETS' : 'the secrets option');
  return { json, appKeys: [...parsed.keys()], source };
}

function resolveMode(opts: LocalStackOptions, env: NodeJS.ProcessEnv): SignatureMode {
  const raw = opts.signatureMode ?? env.SIGNATURE_MODE ?? 'enforce';
  const mode = parseSignatureMode(raw);
  if (!mode)
    throw new Error(
      `signature mode must be ${SIGNATURE_MODES_IN_WORDS}, not ${JSON.stringify(raw.trim().toLowerCase())}`,
    );
  return mode;
}

function listen(server: Server, port: number, host: string, hint = ''): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(err.code === 'EADDRINUSE' ? new Error(`port ${port} on ${host} is already in use${hint}`) : err);
    };
    const onListening = () => {
      server.off('error', onError);
      resolvePort((server.address() as AddressInfo).port);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

function closeServer(server: Server, graceMs: number): Promise<void> {
  return new Promise((done) => {
    if (!server.listening) return done();
    const force = setTimeout(() => server.closeAllConnections(), graceMs);
    server.close(() => {
      clearTimeout(force);
      done();
    });
    server.closeIdleConnections();
  });
}

async function ensureTable(dynamo: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (err) {
    if ((err as Error).name !== 'ResourceNotFoundException') throw err;
  }
  await dynamo.send(new CreateTableCommand(tableDefinition(tableName)));
  for (let i = 0; i < 100; i++) {
    const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`table ${tableName} did not become active`);
}

/**
 * The queues as infra/queues.yml declares them. Settings are applied on every start, so queues kept from
 * an earlier run get the current ones. Queue URLs are built on the emulator's address: fauxqs names
 * queues `sqs.<region>.localhost`, which does not resolve everywhere, and the SDK sends each call to the
 * host of its QueueUrl.
 */
async function ensureQueues(sqs: SQSClient, endpoint: string, names: ReturnType<typeof resourceNames>) {
  const create = async (name: string, attributes: Record<string, string>) => {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
    const url = new URL(new URL(QueueUrl!).pathname, endpoint).href;
    await sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: attributes }));
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
    );
    return { url, arn: Attributes!.QueueArn! };
  };
  const dlq = await create(names.deadLetterQueue, {
    MessageRetentionPeriod: String(queueSettings.deadLetterRetentionS),
  });
  const main = await create(names.queue, {
    VisibilityTimeout: String(queueSettings.visibilityTimeoutS),
    MessageRetentionPeriod: String(queueSettings.retentionS),
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: queueSettings.maxReceiveCount }),
  });
  return { main, dlq };
}

export async function startLocalStack(opts: LocalStackOptions = {}): Promise<LocalStack> {
  const env = opts.env ?? process.env;
  const cwd = resolve(opts.cwd ?? process.cwd());
  const host = opts.host ?? '127.0.0.1';
  const memory = opts.memory ?? false;
  const dataDir = memory ? null : resolve(cwd, opts.dataDir ?? DATA_DIR);
  const stackFile = stackFilePath(cwd);
  const signatureMode = resolveMode(opts, env);
  const secrets = resolveSecrets(opts, env);
  // Checked here with the ingest's own parser, so a bad range fails the start with its sentence.
  const allowedSourceCidrs = opts.allowedSourceCidrs?.join(',') ?? env.ALLOWED_SOURCE_CIDRS;
  const allowedSources = parseAllowList(
    allowedSourceCidrs,
    opts.allowedSourceCidrs ? '--allow-cidr' : 'ALLOWED_SOURCE_CIDRS',
  );
  const names = resourceNames(LOCAL_STAGE);

  const running = readLocalStack(cwd);
  if (running)
    throw new Error(`a local stack is already running for ${cwd} (pid ${running.pid}, ${running.url}); stop it first`);

  const restoreSink: LogSink | null = opts.quiet ? setLogSink(() => {}) : null;
  let ready = false;
  let ingest: DeployedHandlers['ingest'] | undefined;
  let api: DeployedHandlers['api'] | undefined;
  let server: Server | undefined;
  let dynamoServer: Server | undefined;
  let fauxqs: FauxqsServer | undefined;
  let dynamo: DynamoDBClient | undefined;
  let sqs: SQSClient | undefined;
  let sns: SNSClient | undefined;
  let poller: SqsPoller | undefined;
  let info: LocalStackInfo | undefined;

  // The reverse of the start: the stack file goes, no new requests are taken (those in progress finish,
  // they still need the queue), the pollers finish the batches in hand (they still need the table), then
  // the emulators close.
  const stopAll = async () => {
    ready = false;
    const steps: Array<() => Promise<unknown> | undefined> = [
      () => (info ? removeStackFile(stackFile, info) : undefined),
      () => (server ? closeServer(server, 5000) : undefined),
      () => poller?.stop(),
      () => {
        dynamo?.destroy();
        sqs?.destroy();
        sns?.destroy();
        return fauxqs?.stop();
      },
      () => (dynamoServer ? closeServer(dynamoServer, 5000) : undefined),
    ];
    for (const step of steps) {
      try {
        await step();
      } catch {
        // Keep stopping the rest.
      }
    }
    if (restoreSink) setLogSink(restoreSink);
  };

  try {
    // The HTTP port first: a port already taken fails the start before anything else is done. Until the
    // stack is ready every request is answered 503 (/health included).
    server = createGateway({
      handler: (event) => ingest!(event),
      api: (event) => api!(event),
      // The setting the ingest reads (MAX_BODY_BYTES), so that the gateway keeps enough of a body to let it judge.
      maxBodyBytes: readIngestSettings(process.env).settings.maxBodyBytes,
      isReady: () => ready && ingest !== undefined && api !== undefined,
      log: createLogger('gateway'),
    });
    const port = await listen(server, opts.port ?? 3000, host, ' (another "callbacks dev"? pick another with --port)');

    if (dataDir) await mkdir(join(dataDir, 'dynamodb'), { recursive: true });
    dynamoServer = createDynalite(dataDir ? join(dataDir, 'dynamodb') : undefined);
    const dynamoPort = await listen(dynamoServer, opts.dynamoPort ?? 0, '127.0.0.1');
    const dynamoEndpoint = `http://127.0.0.1:${dynamoPort}`;

    fauxqs = await startLocalSqs({
      port: opts.sqsPort ?? 0,
      logger: false,
      defaultRegion: LOCAL_REGION,
      ...(dataDir ? { dataDir: join(dataDir, 'sqs') } : {}),
    });
    const sqsEndpoint = `http://127.0.0.1:${fauxqs.port}`;

    dynamo = new DynamoDBClient({ endpoint: dynamoEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    sqs = new SQSClient({ endpoint: sqsEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    sns = new SNSClient({ endpoint: sqsEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    await ensureTable(dynamo, names.table);
    const queues = await ensureQueues(sqs, sqsEndpoint, names);
    // fauxqs serves SNS on the same port, with fan-out to SQS subscriptions.
    const events = await ensureEventsTopicAndQueue(sns, sqs, sqsEndpoint, {
      topic: names.eventsTopic,
      queue: names.eventsQueue,
    });

    const handlers = await loadDeployedHandlers({
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      AWS_ENDPOINT_URL_SQS: sqsEndpoint,
      AWS_ENDPOINT_URL_DYNAMODB: dynamoEndpoint,
      AWS_ENDPOINT_URL_SNS: sqsEndpoint,
      QUEUE_URL: queues.main.url,
      TASK_EVENTS_TOPIC_ARN: events.topicArn,
      TASKS_TABLE: names.table,
      CALLBACK_SECRETS: secrets.json,
      SIGNATURE_MODE: signatureMode,
      ...(allowedSourceCidrs === undefined ? {} : { ALLOWED_SOURCE_CIDRS: allowedSourceCidrs }),
      // The local stack is development: mode off may run here, and nowhere else.
      DEVELOPMENT_STAGE: 'true',
    });
    ingest = handlers.ingest;
    api = handlers.api;

    poller = startSqsPoller({
      sqs,
      queueUrl: queues.main.url,
      queueArn: queues.main.arn,
      region: LOCAL_REGION,
      handler: handlers.worker,
      batchSize: eventSourceMapping.batchSize,
      batchingWindowMs: eventSourceMapping.batchingWindowS * 1000,
      concurrency: eventSourceMapping.maximumConcurrency,
      retryDelaySeconds: opts.retryDelaySeconds ?? DEFAULT_RETRY_DELAY_S,
      maxReceiveCount: queueSettings.maxReceiveCount,
      log: createLogger('poller'),
    });

    const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    const url = `http://${urlHost}:${port}`;
    info = {
      pid: process.pid,
      url,
      dynamoEndpoint,
      sqsEndpoint,
      region: LOCAL_REGION,
      tableName: names.table,
      queueUrl: queues.main.url,
      dlqUrl: queues.dlq.url,
      eventsTopicArn: events.topicArn,
      eventsQueueUrl: events.queueUrl,
      dataDir,
      startedAt: new Date().toISOString(),
      secretsSource: secrets.source,
      signatureMode,
      allowedSources: [...(allowedSources?.ranges ?? [])],
    };
    await writeStackFile(stackFile, info);
    ready = true;

    let stopping: Promise<void> | undefined;
    const started = poller;
    return {
      url,
      info,
      stackFile,
      signatureMode,
      allowedSources: allowedSources?.ranges ?? [],
      appKeys: secrets.appKeys,
      secretsSource: secrets.source,
      poller: { stats: started.stats, busy: () => started.busy() },
      stop: () => (stopping ??= stopAll()),
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
