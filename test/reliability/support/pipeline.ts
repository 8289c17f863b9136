// The whole receiver in this process, assembled from the same parts as the local stack (devkit/local/) but
// with the seams a fault test needs: the ingest's secrets and dependencies, the worker's store (to wrap
// it), and the SQS emulator, which can be stopped and started again on the same port with its data.
// HTTP gateway -> ingest handler -> fauxqs queue (+ dead-letter queue) -> poller -> processBatch -> dynalite.
// The resources carry the local stage's names, and the ingest's, the poller's and the worker's calls are
// checked against their roles in the packaged template, as on the local stack (devkit/local/iam/).
import { mkdirSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { FauxqsServer } from 'fauxqs';
import { DATA_DIR, type LocalStackInfo, STACK_FILE } from '../../../devkit/local/stack-file.ts';
import { DynamoTaskStore } from '../../../lib/aws/dynamo/read/task-store.ts';
import { queueDepth } from '../../../lib/aws/sqs/dlq.ts';
import type { TaskStore } from '../../../lib/domain/task-store.ts';
import type { BatchWriter } from '../../../lib/domain/batch.ts';
import { buildIngestDependencies, type IngestDependencies } from '../../../lib/ingest/config.ts';
import { createSqsClient } from '../../../lib/ingest/enqueue.ts';
import { createClaimClient } from '../../../lib/ingest/claim.ts';
import { handleCallbackRequest } from '../../../lib/ingest/handle-request.ts';
import type { IngestResponse } from '../../../lib/http-responses.ts';
import type { SecretsProvider } from '../../../lib/signature/secrets.ts';
import { startLocalSqs } from '../../../devkit/local/fauxqs.ts';
import { withoutSdkLogging } from '../../../lib/aws/clients.ts';
import { createGateway } from '../../../devkit/local/http-gateway.ts';
import { startSqsPoller, type SqsPoller } from '../../../devkit/local/sqs-poller.ts';
import { createLogger } from '../../../lib/log.ts';
import type { SignatureMode } from '../../../lib/signature/verdicts.ts';
import { processBatch } from '../../../lib/worker/process-batch.ts';
import { startDynamo, type LocalDynamo } from '../../../devkit/local/dynamo.ts';
import {
  LOCAL_ACCOUNT_ID,
  LOCAL_CREDENTIALS,
  LOCAL_STAGE,
  SERVICE,
  resourceNames,
} from '../../../devkit/local/deployed-settings.ts';
import { type Denial, enforceIam, IamSession, setIamSession } from '../../../devkit/local/iam/enforce.ts';
import { eventSourceMappingKey, setPrincipals } from '../../../devkit/local/iam/principals.ts';
import { ResolvedTemplate } from '../../../devkit/local/resolved-template.ts';
import { stackSettings } from '../../../devkit/local/stack-template.ts';
import { loadTemplate } from '../../../devkit/local/template.ts';

const REGION = 'us-east-1';

export interface PipelineOptions {
  /** appKey -> secrets (CALLBACK_SECRETS), unless `secrets` is given. */
  secretsJson?: Record<string, string[]>;
  secrets?: SecretsProvider;
  mode?: SignatureMode;
  /** Wraps the worker's store, to inject faults. */
  wrapStore?: (store: TaskStore & BatchWriter) => TaskStore & BatchWriter;
  /** Receives before SQS moves a message to the dead-letter queue (deployed: 5). */
  maxReceiveCount?: number;
  /** Where fauxqs keeps its data, so that a restart finds the messages again. */
  sqsDataDir?: string;
  /** Seconds before a failed record comes back (0: at once). */
  retryDelaySeconds?: number;
  /** Wraps the ingest handler the gateway calls, to watch its answers. */
  wrapIngest?: (
    handler: (event: Parameters<typeof handleCallbackRequest>[0]) => Promise<IngestResponse>,
  ) => (event: Parameters<typeof handleCallbackRequest>[0]) => Promise<IngestResponse>;
}

export interface Pipeline {
  url: string;
  dynamo: LocalDynamo;
  /** The unwrapped store, for reading what was stored. */
  store: DynamoTaskStore;
  sqs: SQSClient;
  queueUrl: string;
  dlqUrl: string;
  ingest: IngestDependencies;
  poller: SqsPoller;
  /** Stops the SQS emulator (an outage) and starts it again on the same port with the same data. */
  stopSqs(): Promise<void>;
  startSqs(): Promise<void>;
  /** The main queue holds nothing (visible or in flight) and no batch is being processed. */
  idle(): Promise<boolean>;
  /** What `callbacks dev` leaves in `<dir>/.data/stack.json`, so that the CLI run in `dir` finds this pipeline. */
  announceTo(dir: string): LocalStackInfo;
  /** The calls the roles refused. */
  denials: readonly Denial[];
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls a condition until it holds; the bound only keeps a broken run from hanging. */
export async function waitFor(
  what: string,
  condition: () => Promise<boolean> | boolean,
  maxMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for: ${what}`);
    await sleep(25);
  }
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

export async function startPipeline(opts: PipelineOptions = {}): Promise<Pipeline> {
  const names = resourceNames(LOCAL_STAGE);
  const dynamo = await startDynamo(names.table);
  const maxReceiveCount = opts.maxReceiveCount ?? 5;

  const sqsOptions = { logger: false, defaultRegion: REGION, ...(opts.sqsDataDir ? { dataDir: opts.sqsDataDir } : {}) };
  let fauxqs: FauxqsServer = await startLocalSqs({ port: 0, ...sqsOptions });
  const sqsPort = fauxqs.port;
  const sqsEndpoint = `http://127.0.0.1:${sqsPort}`;
  const localUrl = (queueUrl: string) => new URL(new URL(queueUrl).pathname, sqsEndpoint).href;
  const account = {
    region: REGION,
    accountId: LOCAL_ACCOUNT_ID,
    stackName: `${SERVICE}-${LOCAL_STAGE}`,
    sqsEndpoint,
    parameters: {},
  };
  const { template } = loadTemplate();
  const settings = stackSettings(new ResolvedTemplate(template, account));
  // FIFO, as deployed: the attributes a queue is created with, from the template (infra/queues.yml).
  const fifo = settings.queues.find((q) => q.name === names.queue)!.createAttributes;
  const dlq = fauxqs.createQueue(names.deadLetterQueue, { attributes: fifo });
  const queue = fauxqs.createQueue(names.queue, {
    attributes: { ...fifo, RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.queueArn, maxReceiveCount }) },
  });
  const queueUrl = localUrl(queue.queueUrl);
  const dlqUrl = localUrl(dlq.queueUrl);
  const sqsConfig = {
    endpoint: sqsEndpoint,
    region: REGION,
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 2,
  };
  const sqs = withoutSdkLogging(new SQSClient(sqsConfig));

  // The roles of the template, for the ingest, the event source mapping and the worker.
  const iam = new IamSession({ region: REGION, accountId: LOCAL_ACCOUNT_ID });
  setPrincipals(iam, template, account, settings);
  const previousIam = setIamSession(iam);
  const ingestSqs = createSqsClient({ region: REGION, endpoint: sqsEndpoint, credentials: LOCAL_CREDENTIALS });
  enforceIam(ingestSqs, 'ingest');
  // The replay claim's client, as the ingest builds it (its short time-outs), under the ingest's role.
  const ingestDynamo = createClaimClient({ region: REGION, endpoint: dynamo.endpoint, credentials: LOCAL_CREDENTIALS });
  enforceIam(ingestDynamo, 'ingest');
  const pollerSqs = withoutSdkLogging(new SQSClient(sqsConfig));
  enforceIam(pollerSqs, eventSourceMappingKey('worker'));
  const workerDynamo = withoutSdkLogging(
    new DynamoDBClient({ endpoint: dynamo.endpoint, region: REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 3 }),
  );
  enforceIam(workerDynamo, 'worker');

  const ingest = buildIngestDependencies(
    {
      QUEUE_URL: queueUrl,
      SIGNATURE_MODE: opts.mode ?? 'enforce',
      // Like the local stack: a development stage, where mode off may run.
      DEVELOPMENT_STAGE: 'true',
      CALLBACK_SECRETS: JSON.stringify(opts.secretsJson ?? { 'demo-app': ['demo-secret'] }),
      TASKS_TABLE: dynamo.tableName,
    },
    {
      sqs: ingestSqs,
      dynamo: ingestDynamo,
      ...(opts.secrets ? { secrets: opts.secrets } : {}),
    },
  );
  const handler = (event: Parameters<typeof handleCallbackRequest>[0]) => handleCallbackRequest(event, ingest);
  const gateway = createGateway({
    handler: opts.wrapIngest ? opts.wrapIngest(handler) : handler,
    maxBodyBytes: ingest.settings.maxBodyBytes,
    isReady: () => true,
    log: createLogger('gateway'),
  });
  const port = await listen(gateway);

  const store = new DynamoTaskStore({ client: dynamo.client, tableName: dynamo.tableName });
  const workerBase = new DynamoTaskStore({ client: workerDynamo, tableName: dynamo.tableName });
  const workerStore = opts.wrapStore ? opts.wrapStore(workerBase) : workerBase;
  const workerLog = createLogger('worker');
  const poller = startSqsPoller({
    sqs: pollerSqs,
    queueUrl,
    queueArn: queue.queueArn,
    region: REGION,
    handler: async (event) => {
      const { batchItemFailures } = await processBatch(event, { store: workerStore, log: workerLog, concurrency: 5 });
      return { batchItemFailures };
    },
    batchSize: 10,
    batchingWindowMs: 20,
    concurrency: 2,
    retryDelaySeconds: opts.retryDelaySeconds ?? 0,
    // Back within a moment of the queue's return after an outage (stopSqs, startSqs).
    maxReceiveBackoffMs: 200,
    maxReceiveCount,
    log: createLogger('poller'),
  });

  let sqsRunning = true;
  return {
    url: `http://127.0.0.1:${port}`,
    dynamo,
    store,
    sqs,
    queueUrl,
    dlqUrl,
    ingest,
    poller,
    async stopSqs() {
      sqsRunning = false;
      await fauxqs.stop();
    },
    async startSqs() {
      fauxqs = await startLocalSqs({ port: sqsPort, ...sqsOptions });
      sqsRunning = true;
    },
    async idle() {
      if (!sqsRunning || poller.busy() > 0) return false;
      const depth = await queueDepth(sqs, queueUrl).catch(() => null);
      // Busy is read again: a batch may have been received while the depth was being read.
      return depth !== null && depth.visible + depth.inFlight === 0 && poller.busy() === 0;
    },
    announceTo(dir: string) {
      const info: LocalStackInfo = {
        pid: process.pid,
        url: `http://127.0.0.1:${port}`,
        dynamoEndpoint: dynamo.endpoint,
        sqsEndpoint,
        region: REGION,
        tableName: dynamo.tableName,
        queueUrl,
        dlqUrl,
        dataDir: null,
        startedAt: new Date().toISOString(),
      };
      mkdirSync(join(dir, DATA_DIR), { recursive: true });
      writeFileSync(join(dir, DATA_DIR, STACK_FILE), JSON.stringify(info, null, 2));
      return info;
    },
    denials: iam.denials,
    async stop() {
      await new Promise<void>((resolve) => {
        gateway.close(() => resolve());
        gateway.closeAllConnections();
      });
      await poller.stop();
      sqs.destroy();
      pollerSqs.destroy();
      workerDynamo.destroy();
      ingest.sqs.destroy();
      ingestDynamo.destroy();
      // Another pipeline's checks, started meanwhile, stay in force (they are the same roles).
      const current = setIamSession(previousIam);
      if (current !== iam) setIamSession(current);
      if (sqsRunning) await fauxqs.stop();
      await dynamo.stop();
    },
  };
}
