// The whole receiver in one process, for development and end-to-end tests, built from the packaged
// CloudFormation template (devkit/local/template.ts, read by devkit/local/stack-template.ts): DynamoDB (dynalite)
// and SQS/SNS (fauxqs) emulators with the table, the queues and the topics the template declares (plus a
// queue subscribed to the task-events topic, for `callbacks events tail`), an HTTP server standing in for
// API Gateway with the template's routes in front of the deployed handlers (AWS_IAM routes for loopback
// clients only, without authorization), and pollers standing in for the event source mapping in front of
// the deployed worker handler. Each function runs with its environment, time-out and memory size from the
// template, and every AWS call it makes is checked against its role's statements (devkit/local/iam/). The steps
// of the start are modules of their own: the options (stack-options.ts), the resources in the emulators
// (stack-resources.ts), the IAM checks (stack-iam.ts) and the functions (stack-functions.ts).
//
// Data lives under `<dataDir>/dynamodb` (dynalite's LevelDB) and `<dataDir>/sqs` (fauxqs' SQLite), so a
// restart finds the tasks and also every callback that was acknowledged but not yet applied, and the
// dead-letter queue; with `memory` nothing is written. `<cwd>/.data/stack.json` tells the other CLI
// commands where the stack listens; it is removed when the stack stops.
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SNSClient } from '@aws-sdk/client-sns';
import { S3Client } from '@aws-sdk/client-s3';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { ensureEventsTopicAndQueue } from '../../lib/aws/sqs/event-queue.ts';
import { loadConsoleFiles } from '../console/static.ts';
import { readIngestSettings } from '../../lib/ingest/config.ts';
import { createLogger } from '../../lib/log.ts';
import type { SignatureMode } from '../../lib/signature/verdicts.ts';
import {
  LOCAL_ACCOUNT_ID,
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  LOCAL_STAGE,
  SERVICE,
  resourceNames,
} from './deployed-settings.ts';
import { withoutSdkLogging } from '../../lib/aws/clients.ts';
import { createDynalite, dynamoClient } from './dynamo.ts';
import { createFaultSession, setFaultSession } from './faults.ts';
import type { FaultKind, FaultRates } from './fault-spec.ts';
import { startLocalSqs } from './fauxqs.ts';
import { createGateway, type GatewayRoute } from './http-gateway.ts';
import { type IamSession, setIamSession, type Denial } from './iam/enforce.ts';
import { ResolvedTemplate } from './resolved-template.ts';
import { closeServer, listen, quietly } from './server-lifecycle.ts';
import { silenceWhileRunning } from './quiet-stacks.ts';
import type { PollerStats } from './sqs-poller.ts';
import { type LocalPoller, startPollers } from './stack-pollers.ts';
import { startLocalFunctions } from './stack-functions.ts';
import { startLocalSchedules } from './schedules.ts';
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
import { ensureBuckets, localBuckets, localStorageSettings } from './stack-storage.ts';
import { type LocalArchive, startLocalArchive } from './stack-archive.ts';
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

/** The faults a stack provokes (`callbacks dev --faults`). */
export interface LocalFaults {
  readonly rates: FaultRates;
  /** The seed the draws come from: the same seed gives the same draws again. */
  readonly seed: string;
  /** How many of each kind were injected so far. */
  readonly injected: Readonly<Record<FaultKind, number>>;
  /** Other rates from now on; `{}`: no more faults (what failed is retried, or waits in the dead-letter queue). */
  set(rates: FaultRates): void;
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
  /** The poller of the stack's queue (the FIFO one the ingest sends to). */
  poller: { stats: Readonly<PollerStats>; busy(): number };
  /** A poller per event source mapping of the template, the one above included. */
  pollers: readonly LocalPoller[];
  /** Runs the scheduled functions (the sweeper) once now, and returns what each answered. */
  runSchedules(): Promise<unknown[]>;
  /** What was taken from the template, resolved for this stack. */
  settings: StackSettings;
  /** The cache key of the template the stack runs (see devkit/local/template.ts); `null` for a given one. */
  templateHash: string | null;
  iam: LocalIam;
  /**
   * A client of the stack's table for tests and tools in this process (the emulator's own, devkit/local/dynamo.ts):
   * no socket and no signature computed. The functions reach the table over HTTP, with their roles.
   */
  tableClient(): DynamoDBClient;
  /** null when the stack runs without faults. */
  faults: LocalFaults | null;
  /** The archive's stream and its stand-in (devkit/local/stack-archive.ts); null: the template has none. */
  archive: LocalArchive | null;
  stop(): Promise<void>;
}

/** The emulators, each stopped by `resources` when it is disposed (the clients before the servers they talk to). */
async function startEmulators(resources: AsyncDisposableStack, dataDir: string | null, opts: LocalStackOptions) {
  if (dataDir) await mkdir(join(dataDir, 'dynamodb'), { recursive: true });
  const dynamoServer = createDynalite(dataDir ? join(dataDir, 'dynamodb') : undefined);
  resources.defer(quietly(() => closeServer(dynamoServer, 5000)));
  const dynamoPort = await listen(dynamoServer, opts.dynamoPort ?? 0, '127.0.0.1');
  const dynamoEndpoint = `http://127.0.0.1:${dynamoPort}`;

  const fauxqs = await startLocalSqs({
    port: opts.sqsPort ?? 0,
    logger: false,
    defaultRegion: LOCAL_REGION,
    ...(dataDir ? { dataDir: join(dataDir, 'sqs') } : {}),
  });
  resources.defer(quietly(() => fauxqs.stop()));
  const sqsEndpoint = `http://127.0.0.1:${fauxqs.port}`;

  const client = { region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
  // The stack's own client (its table's set-up, and tableClient()): the emulator's, without a socket.
  const dynamo = dynamoClient(dynamoEndpoint, 3, dynamoServer);
  const sqs = withoutSdkLogging(new SQSClient({ endpoint: sqsEndpoint, ...client }));
  // fauxqs serves SNS on the same port, with fan-out to SQS subscriptions, and S3 (path-style).
  const sns = withoutSdkLogging(new SNSClient({ endpoint: sqsEndpoint, ...client }));
  const s3 = withoutSdkLogging(new S3Client({ endpoint: sqsEndpoint, forcePathStyle: true, ...client }));
  resources.defer(() => {
    dynamo.destroy();
    sqs.destroy();
    sns.destroy();
    s3.destroy();
  });
  return { dynamoEndpoint, sqsEndpoint, dynamo, sqs, sns, s3 };
}

/**
 * Each step of the start registers how it is undone in one AsyncDisposableStack, so that a start failing
 * half-way undoes what it did, in reverse, and a stop undoes it all: the stack file goes, no new requests are
 * taken (those in progress finish, they still need the queue), the poller finishes the batches in hand (they
 * still need the table), then the process-wide hooks are withdrawn and the emulators close.
 */
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

  const resources = new AsyncDisposableStack();
  let ready = false;
  let defaultRoute: ((event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyResultV2>) | undefined;
  const routes: GatewayRoute[] = [];
  let iamSession: IamSession | undefined;

  try {
    if (opts.quiet) resources.defer(silenceWhileRunning());
    // The HTTP port first: a port already taken fails the start before anything else is done. Until the
    // stack is ready every request is answered 503 (/health included).
    const server = createGateway({
      handler: (event) => defaultRoute!(event),
      // Filled in once the handlers are loaded; the gateway reads the list at each request.
      routes,
      ...(opts.consoleDir ? { console: loadConsoleFiles(opts.consoleDir) } : {}),
      // The read API and the console answer requests addressed to a loopback name, or to the address listened on.
      hostNames: [host],
      // The setting the ingest reads (MAX_BODY_BYTES), so that the gateway keeps enough of a body to let it judge.
      maxBodyBytes: readIngestSettings(env).settings.maxBodyBytes,
      // The read API's callers hold the policy the stack offers them: a request it does not allow gets 403.
      authorizeIam: (method, path) => readApiCallAllowed(iamSession, method, path),
      isReady: () => ready && defaultRoute !== undefined,
      log: createLogger('gateway'),
    });
    // A start that fails closes it last; a stop, before the poller (below): closing a closed server does nothing.
    const closeGateway = quietly(() => closeServer(server, 5000));
    resources.defer(closeGateway);
    const port = await listen(server, opts.port ?? 3000, host, ' (another "callbacks dev"? pick another with --port)');

    const { dynamoEndpoint, sqsEndpoint, dynamo, sqs, sns, s3 } = await startEmulators(resources, dataDir, opts);

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
    if (!settings.topics.some((topic) => topic.name === names.eventsTopic))
      throw new Error(`the template has no topic ${names.eventsTopic} for the task events`);
    const events = await ensureEventsTopicAndQueue(sns, sqs, sqsEndpoint, {
      topic: names.eventsTopic,
      queue: names.eventsQueue,
    });
    const storage = localStorageSettings(settings.functions, env);
    await ensureBuckets(s3, localBuckets(storage));
    const archive = await startLocalArchive(resources, s3, resolved);

    // IAM: each function's calls under its role; each event source mapping's under its function's. The stack's
    // queue is the FIFO one the ingest sends to.
    if (settings.mappings.length === 0) throw new Error('the template has no SQS event source mapping');
    const mapped = settings.mappings.map((m) => ({
      mapping: m,
      queue: settings.queues.find((q) => q.logicalId === m.queue)!,
      fn: settings.functions.find((f) => f.key === m.functionKey)!,
    }));
    const main = mapped.find((m) => m.queue.fifo) ?? mapped[0]!;
    const { queue } = main;
    const dlq = settings.queues.find((q) => q.logicalId === queue.deadLetterQueue);
    const { session, useRolesOf } = iamSessionOf(template, account, settings, log);
    if (iamEnforced) {
      iamSession = session;
      setIamSession(session);
      resources.defer(() => {
        const previous = setIamSession(undefined);
        // Another stack's checks, started meanwhile in this process, stay in force.
        if (previous !== session) setIamSession(previous);
      });
      for (const m of mapped) assertMappingCanConsume(session, m.fn.key, m.queue.arn);
    }

    const faultSession = opts.faults
      ? createFaultSession(opts.faults.rates, opts.faults.seed ?? randomUUID().slice(0, 8), createLogger('faults'))
      : undefined;
    if (faultSession) {
      setFaultSession(faultSession);
      resources.defer(() => {
        const previous = setFaultSession(undefined);
        // Another stack's faults, started meanwhile in this process, stay in force.
        if (previous !== faultSession) setFaultSession(previous);
      });
    }

    const functions = await startLocalFunctions({
      functions: settings.functions,
      env,
      ...(opts.sweepLookBack ? { extraEnvironment: { SWEEP_LOOK_BACK: opts.sweepLookBack } } : {}),
      secretsJson: secrets.json,
      sqsEndpoint,
      dynamoEndpoint,
      firehoseEndpoint: archive?.endpoint,
      iam: iamEnforced ? session : undefined,
      log,
    });
    resources.defer(() => functions.stop());
    const invokers = functions.invokers;
    const http = (key: string) => (event: APIGatewayProxyEventV2) =>
      invokers[key]!(event) as Promise<APIGatewayProxyResultV2>;
    for (const route of settings.routes) {
      if (route.routeKey === '$default') defaultRoute = http(route.functionKey);
      else
        routes.push({ routeKey: route.routeKey, handler: http(route.functionKey), authorization: route.authorization });
    }
    // Without a $default route, API Gateway answers what no route takes with its own 404.
    defaultRoute ??= async () => ({ statusCode: 404, body: JSON.stringify({ message: 'Not Found' }) });

    const { pollers, poller } = startPollers({
      mapped,
      queue,
      invokers,
      sqsEndpoint,
      iamSession,
      retryDelaySeconds: opts.retryDelaySeconds ?? DEFAULT_RETRY_DELAY_S,
      resources,
    });
    resources.defer(closeGateway);

    const schedules = startLocalSchedules(
      settings.schedules,
      invokers,
      opts.scheduleEveryMs ?? DEFAULT_SCHEDULE_EVERY_MS,
      createLogger('schedules'),
    );
    resources.defer(quietly(() => schedules.stop()));

    const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    const url = `http://${urlHost}:${port}`;
    const info: LocalStackInfo = {
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
      storage: { s3Endpoint: sqsEndpoint, settings: storage },
      ...(archive ? { archive: { bucket: archive.stream.bucket, prefix: archive.stream.prefix } } : {}),
    };
    resources.defer(quietly(() => removeStackFile(stackFile, info)));
    await writeStackFile(stackFile, info);
    resources.defer(() => {
      ready = false;
    });
    ready = true;

    // From here on the stack's, undone by stop().
    const started = resources.move();
    let stopping: Promise<void> | undefined;
    const mainPoller = poller;
    return {
      url,
      info,
      stackFile,
      signatureMode,
      allowedSources: allowedSources.ranges,
      appKeys: secrets.appKeys,
      secretsSource: secrets.source,
      poller: { stats: mainPoller.stats, busy: () => mainPoller.busy() },
      pollers,
      runSchedules: () => schedules.runNow(),
      settings,
      templateHash: loaded?.hash ?? null,
      tableClient: () => dynamo,
      iam: { enforced: iamEnforced, denials: session.denials, grants: session.grants, useRolesOf },
      faults: faultSession
        ? {
            get rates() {
              return faultSession.rates;
            },
            seed: faultSession.seed,
            injected: faultSession.injected,
            set: (rates) => faultSession.setRates(rates),
          }
        : null,
      archive,
      stop: () => (stopping ??= started.disposeAsync().catch(() => undefined)),
    };
  } catch (err) {
    await resources.disposeAsync().catch(() => undefined);
    throw err;
  }
}
