// The whole receiver in one process, for development and end-to-end tests, built from the packaged
// CloudFormation template (lib/local/template.ts, read by lib/local/stack-template.ts): DynamoDB (dynalite)
// and SQS/SNS (fauxqs) emulators with the table, the queues and the topics the template declares (plus a
// queue subscribed to the task-events topic, for `callbacks events tail`), an HTTP server standing in for
// API Gateway with the template's routes in front of the deployed handlers (AWS_IAM routes for loopback
// clients only, without authorization), and pollers standing in for the event source mapping in front of
// the deployed worker handler. Each function runs with its environment, time-out and memory size from the
// template, and every AWS call it makes is checked against its role's statements (lib/local/iam/). The steps
// of the start are modules of their own: the options (stack-options.ts), the resources in the emulators
// (stack-resources.ts), the IAM checks (stack-iam.ts) and the functions (stack-functions.ts).
//
// Data lives under `<dataDir>/dynamodb` (dynalite's LevelDB) and `<dataDir>/sqs` (fauxqs' SQLite), so a
// restart finds the tasks and also every callback that was acknowledged but not yet applied, and the
// dead-letter queue; with `memory` nothing is written. `<cwd>/.data/stack.json` tells the other CLI
// commands where the stack listens; it is removed when the stack stops.
import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join, resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SNSClient } from '@aws-sdk/client-sns';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { FauxqsServer } from 'fauxqs';
import { ensureEventsTopicAndQueue } from '../aws/sqs/event-queue.ts';
import { loadConsoleFiles } from '../console/static.ts';
import { readIngestSettings } from '../ingest/config.ts';
import { createLogger, setLogSink, type LogSink } from '../log.ts';
import type { SignatureMode } from '../queue-message.ts';
import {
  LOCAL_ACCOUNT_ID,
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  LOCAL_STAGE,
  SERVICE,
  resourceNames,
} from './deployed-settings.ts';
import { createDynalite } from './dynamo.ts';
import { startLocalSqs } from './fauxqs.ts';
import { createGateway, type GatewayRoute } from './http-gateway.ts';
import { enforceIam, type IamSession, setIamSession, type Denial } from './iam/enforce.ts';
import { eventSourceMappingKey } from './iam/principals.ts';
import type { LocalInvoke } from './lambda-runtime.ts';
import { ResolvedTemplate } from './resolved-template.ts';
import { serveSecrets } from './secrets-extension.ts';
import { closeServer, listen } from './server-lifecycle.ts';
import { startSqsPoller, type PollerStats, type SqsPoller } from './sqs-poller.ts';
import { startLocalFunctions } from './stack-functions.ts';
import { startLocalSchedules, type LocalSchedules } from './schedules.ts';
import { assertMappingCanConsume, iamSessionOf, readApiCallAllowed } from './stack-iam.ts';
import {
  DEFAULT_RETRY_DELAY_S,
  DEFAULT_SCHEDULE_EVERY_MS,
  type LocalStackOptions,
  resolveAllowedSources,
  resolveMode,
  resolveSecrets,
  type SecretsSource,
} from './stack-options.ts';
import { ensureQueues, ensureTable, ensureTopics } from './stack-resources.ts';
import { stackSettings, type StackSettings } from './stack-template.ts';
import { loadTemplate, type Template } from './template.ts';
import {
  DATA_DIR,
  type LocalStackInfo,
  readLocalStack,
  removeStackFile,
  stackFilePath,
  writeStackFile,
} from './stack-file.ts';

/** The IAM checks of a running stack. */
export interface LocalIam {
  enforced: boolean;
  /** Every call refused so far. */
  readonly denials: readonly Denial[];
  /** Every call allowed so far: `<function> <action> <resource>` -> the statement that allowed it. */
  readonly grants: ReadonlyMap<string, string>;
  /**
   * Checks from now on against the roles of `template` (the same resources, other statements): a test of
   * the roles runs one stack against many variants of them.
   */
  useRolesOf(template: Template): void;
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
  secretsSource: SecretsSource;
  poller: { stats: Readonly<PollerStats>; busy(): number };
  /** Runs the scheduled functions (the sweeper) once now, and returns what each answered. */
  runSchedules(): Promise<unknown[]>;
  /** What was taken from the template, resolved for this stack. */
  settings: StackSettings;
  /** The cache key of the template the stack runs (see lib/local/template.ts); `null` for a given one. */
  templateHash: string | null;
  iam: LocalIam;
  stop(): Promise<void>;
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
  const allowedSources = resolveAllowedSources(opts, env);
  const names = resourceNames(LOCAL_STAGE);
  const iamEnforced = opts.iam ?? true;
  const loaded = opts.template ? null : loadTemplate();
  const template = opts.template ?? loaded!.template;

  const running = readLocalStack(cwd);
  if (running)
    throw new Error(`a local stack is already running for ${cwd} (pid ${running.pid}, ${running.url}); stop it first`);

  const restoreSink: LogSink | null = opts.quiet ? setLogSink(() => {}) : null;
  let ready = false;
  let invokers: Record<string, LocalInvoke> | undefined;
  let defaultRoute: ((event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyResultV2>) | undefined;
  const routes: GatewayRoute[] = [];
  let iamSession: IamSession | undefined;
  let servingSecrets = false;
  let server: Server | undefined;
  let dynamoServer: Server | undefined;
  let fauxqs: FauxqsServer | undefined;
  let dynamo: DynamoDBClient | undefined;
  let sqs: SQSClient | undefined;
  let sns: SNSClient | undefined;
  let pollerSqs: SQSClient | undefined;
  let poller: SqsPoller | undefined;
  let schedules: LocalSchedules | undefined;
  let info: LocalStackInfo | undefined;

  // The reverse of the start: the stack file goes, no new requests are taken (those in progress finish,
  // they still need the queue), the pollers finish the batches in hand (they still need the table), then
  // the emulators close.
  const stopAll = async () => {
    ready = false;
    const steps: Array<() => Promise<unknown> | undefined> = [
      () => (info ? removeStackFile(stackFile, info) : undefined),
      () => (server ? closeServer(server, 5000) : undefined),
      () => schedules?.stop(),
      () => poller?.stop(),
      () => {
        dynamo?.destroy();
        sqs?.destroy();
        pollerSqs?.destroy();
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
    if (servingSecrets) serveSecrets(undefined);
    if (iamSession) {
      const previous = setIamSession(undefined);
      // Another stack's checks, started meanwhile in this process, stay in force.
      if (previous !== iamSession) setIamSession(previous);
    }
    if (restoreSink) setLogSink(restoreSink);
  };

  try {
    // The HTTP port first: a port already taken fails the start before anything else is done. Until the
    // stack is ready every request is answered 503 (/health included).
    server = createGateway({
      handler: (event) => defaultRoute!(event),
      // Filled in once the handlers are loaded; the gateway reads the list at each request.
      routes,
      ...(opts.consoleDir ? { console: loadConsoleFiles(opts.consoleDir) } : {}),
      // The setting the ingest reads (MAX_BODY_BYTES), so that the gateway keeps enough of a body to let it judge.
      maxBodyBytes: readIngestSettings(process.env).settings.maxBodyBytes,
      // The read API's callers hold the policy the stack offers them: a request it does not allow gets 403.
      authorizeIam: (method, path) => readApiCallAllowed(iamSession, method, path),
      isReady: () => ready && defaultRoute !== undefined,
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

    const account = {
      region: LOCAL_REGION,
      accountId: LOCAL_ACCOUNT_ID,
      stackName: `${SERVICE}-${LOCAL_STAGE}`,
      sqsEndpoint,
      // The stack's own choices for the template's parameters; the others keep their defaults.
      parameters: {
        SignatureMode: signatureMode,
        // The local stack is development: mode off may run here, and nowhere else.
        Development: 'true',
        ...(allowedSources.cidrs === undefined ? {} : { AllowedSourceCidrs: allowedSources.cidrs }),
        ...(env.LOG_LEVEL?.trim() ? { LogLevel: env.LOG_LEVEL.trim() } : {}),
        ...(opts.settleAfter ? { SettleAfter: opts.settleAfter } : {}),
      },
    };
    const resolved = new ResolvedTemplate(template, account);
    const settings = stackSettings(resolved);
    const log = createLogger('local-stack');

    await ensureTable(dynamo, settings.table.create);
    await ensureQueues(sqs, settings.queues);
    await ensureTopics(sns, settings, log);
    // fauxqs serves SNS on the same port, with fan-out to SQS subscriptions.
    if (!settings.topics.some((topic) => topic.name === names.eventsTopic))
      throw new Error(`the template has no topic ${names.eventsTopic} for the task events`);
    const events = await ensureEventsTopicAndQueue(sns, sqs, sqsEndpoint, {
      topic: names.eventsTopic,
      queue: names.eventsQueue,
    });

    // IAM: each function's calls under its role; the event source mapping's under the worker's.
    const mapping = settings.mappings[0];
    if (!mapping || settings.mappings.length > 1)
      throw new Error(
        `the local stack runs one SQS event source mapping; the template has ${settings.mappings.length}`,
      );
    const queue = settings.queues.find((q) => q.logicalId === mapping.queue)!;
    const dlq = settings.queues.find((q) => q.logicalId === queue.deadLetterQueue);
    const mappedFunction = settings.functions.find((f) => f.key === mapping.functionKey)!;
    const { session, useRolesOf } = iamSessionOf(template, account, settings, log);
    if (iamEnforced) {
      iamSession = session;
      setIamSession(session);
      assertMappingCanConsume(session, mappedFunction.key, queue.arn);
    }

    invokers = await startLocalFunctions({
      functions: settings.functions,
      env,
      secretsJson: secrets.json,
      sqsEndpoint,
      dynamoEndpoint,
      iam: iamEnforced ? session : undefined,
      log,
      onServingSecrets: () => {
        servingSecrets = true;
      },
    });
    const http = (key: string) => (event: APIGatewayProxyEventV2) =>
      invokers![key]!(event) as Promise<APIGatewayProxyResultV2>;
    for (const route of settings.routes) {
      if (route.routeKey === '$default') defaultRoute = http(route.functionKey);
      else
        routes.push({ routeKey: route.routeKey, handler: http(route.functionKey), authorization: route.authorization });
    }
    // Without a $default route, API Gateway answers what no route takes with its own 404.
    defaultRoute ??= async () => ({ statusCode: 404, body: JSON.stringify({ message: 'Not Found' }) });

    pollerSqs = new SQSClient({ endpoint: sqsEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    enforceIam(pollerSqs, eventSourceMappingKey(mappedFunction.key));
    const invokeWorker = invokers[mapping.functionKey]!;
    poller = startSqsPoller({
      sqs: pollerSqs,
      queueUrl: queue.url,
      queueArn: queue.arn,
      region: LOCAL_REGION,
      handler: async (event: SQSEvent) => {
        const response = (await invokeWorker(event)) as SQSBatchResponse | undefined;
        // Without ReportBatchItemFailures the mapping ignores what the function answers.
        return mapping.reportBatchItemFailures ? response : undefined;
      },
      batchSize: mapping.batchSize,
      batchingWindowMs: mapping.batchingWindowS * 1000,
      concurrency: mapping.maximumConcurrency,
      retryDelaySeconds: opts.retryDelaySeconds ?? DEFAULT_RETRY_DELAY_S,
      ...(queue.maxReceiveCount !== undefined ? { maxReceiveCount: queue.maxReceiveCount } : {}),
      log: createLogger('poller'),
    });

    schedules = startLocalSchedules(
      settings.schedules,
      invokers,
      opts.scheduleEveryMs ?? DEFAULT_SCHEDULE_EVERY_MS,
      createLogger('schedules'),
    );

    const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    const url = `http://${urlHost}:${port}`;
    info = {
      pid: process.pid,
      url,
      dynamoEndpoint,
      sqsEndpoint,
      region: LOCAL_REGION,
      tableName: settings.table.name,
      queueUrl: queue.url,
      dlqUrl: dlq?.url ?? '',
      eventsTopicArn: events.topicArn,
      eventsQueueUrl: events.queueUrl,
      dataDir,
      startedAt: new Date().toISOString(),
      secretsSource: secrets.source,
      signatureMode,
      allowedSources: [...allowedSources.ranges],
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
      allowedSources: allowedSources.ranges,
      appKeys: secrets.appKeys,
      secretsSource: secrets.source,
      poller: { stats: started.stats, busy: () => started.busy() },
      runSchedules: () => schedules!.runNow(),
      settings,
      templateHash: loaded?.hash ?? null,
      iam: {
        enforced: iamEnforced,
        denials: session.denials,
        grants: session.grants,
        useRolesOf,
      },
      stop: () => (stopping ??= stopAll()),
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
