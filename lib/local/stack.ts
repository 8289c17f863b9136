// The whole receiver in one process, for development and end-to-end tests, built from the packaged
// CloudFormation template (lib/local/template.ts, read by lib/local/stack-template.ts): DynamoDB (dynalite)
// and SQS/SNS (fauxqs) emulators with the table, the queues and the topics the template declares (plus a
// queue subscribed to the task-events topic, for `callbacks events tail`), an HTTP server standing in for
// API Gateway with the template's routes in front of the deployed handlers (AWS_IAM routes for loopback
// clients only, without authorization), and pollers standing in for the event source mapping in front of
// the deployed worker handler. Each function runs with its environment, time-out and memory size from the
// template, and every AWS call it makes is checked against its role's statements (lib/local/iam/).
//
// Data lives under `<dataDir>/dynamodb` (dynalite's LevelDB) and `<dataDir>/sqs` (fauxqs' SQLite), so a
// restart finds the tasks and also every callback that was acknowledged but not yet applied, and the
// dead-letter queue; with `memory` nothing is written. `<cwd>/.data/stack.json` tells the other CLI
// commands where the stack listens; it is removed when the stack stops.
import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, SQSClient, SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { FauxqsServer } from 'fauxqs';
import { ensureEventsTopicAndQueue } from '../aws/sqs/event-queue.ts';
import { readIngestSettings } from '../ingest/config.ts';
import { parseSecrets } from '../ingest/secrets.ts';
import { createLogger, setLogSink, type LogSink } from '../log.ts';
import { parseSignatureMode, type SignatureMode, SIGNATURE_MODES_IN_WORDS } from '../queue-message.ts';
import {
  LOCAL_ACCOUNT_ID,
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  LOCAL_STAGE,
  SERVICE,
  resourceNames,
} from './deployed-settings.ts';
import { DEFAULT_SECRETS } from './demo-secrets.ts';
import { createDynalite } from './dynamo.ts';
import { loadDeployedHandlers } from './handlers.ts';
import { startLocalSqs } from './fauxqs.ts';
import { createGateway, type GatewayRoute } from './http-gateway.ts';
import { enforceIam, IamSession, setIamSession, type Denial } from './iam/enforce.ts';
import { eventSourceMappingKey, READ_API_CALLER, setPrincipals } from './iam/principals.ts';
import { localFunction, type LocalInvoke } from './lambda-runtime.ts';
import {
  LOCAL_SESSION_TOKEN,
  isSecretsExtensionLayer,
  secretsExtensionPort,
  serveSecrets,
} from './secrets-extension.ts';
import { loadConsoleFiles } from '../console/static.ts';
import { parseAllowList } from '../ingest/source-ip.ts';
import { startSqsPoller, type PollerStats, type SqsPoller } from './sqs-poller.ts';
import {
  LOCAL_API_ID,
  ResolvedTemplate,
  stackSettings,
  type QueueSettings,
  type StackSettings,
} from './stack-template.ts';
import { loadTemplate, type Template } from './template.ts';
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
  /** The console's built files (dist/console): served under /console/ when given. */
  consoleDir?: string;
  /** Where CALLBACK_SECRETS and SIGNATURE_MODE are read from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /**
   * Check every AWS call of a function against its role in the template (default true). Off only for
   * debugging (`callbacks dev --no-iam`): the local stack then allows what the deployed one refuses.
   */
  iam?: boolean;
  /** The template to run (default: the packaged template of the local stage, lib/local/template.ts). */
  template?: Template;
}

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
  secretsSource: 'option' | 'env' | 'default';
  poller: { stats: Readonly<PollerStats>; busy(): number };
  /** What was taken from the template, resolved for this stack. */
  settings: StackSettings;
  /** The cache key of the template the stack runs (see lib/local/template.ts); `null` for a given one. */
  templateHash: string | null;
  iam: LocalIam;
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

async function ensureTable(dynamo: DynamoDBClient, definition: CreateTableCommandInput): Promise<void> {
  const tableName = definition.TableName!;
  try {
    await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (err) {
    if ((err as Error).name !== 'ResourceNotFoundException') throw err;
  }
  await dynamo.send(new CreateTableCommand(definition));
  for (let i = 0; i < 100; i++) {
    const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`table ${tableName} did not become active`);
}

/**
 * The queues as the template declares them (FIFO ones as FIFO), dead-letter queues first. Settings are applied
 * on every start, so queues kept from an earlier run get the current ones. Queue URLs are built on the emulator's
 * address: fauxqs names queues `sqs.<region>.localhost`, which does not resolve everywhere, and the SDK sends
 * each call to the host of its QueueUrl.
 */
async function ensureQueues(sqs: SQSClient, queues: readonly QueueSettings[]): Promise<void> {
  for (const queue of queues) {
    // FIFO is fixed when a queue is created; the other settings can change later.
    await sqs.send(new CreateQueueCommand({ QueueName: queue.name, Attributes: queue.createAttributes }));
    if (Object.keys(queue.attributes).length > 0)
      await sqs.send(new SetQueueAttributesCommand({ QueueUrl: queue.url, Attributes: queue.attributes }));
  }
}

/** The topics and their SQS subscriptions (with their filter policies); other protocols cannot run here. */
async function ensureTopics(sns: SNSClient, settings: StackSettings, log: ReturnType<typeof createLogger>) {
  for (const topic of settings.topics) {
    await sns.send(new CreateTopicCommand({ Name: topic.name }));
    for (const sub of topic.subscriptions) {
      if (sub.protocol !== 'sqs') {
        log.info('subscription_skipped', { topic: topic.name, protocol: sub.protocol });
        continue;
      }
      await sns.send(
        new SubscribeCommand({
          TopicArn: topic.arn,
          Protocol: 'sqs',
          Endpoint: sub.endpoint,
          Attributes: sub.attributes,
          ReturnSubscriptionArn: true,
        }),
      );
    }
  }
}

/** The actions Lambda needs the role to allow on the queue to create an SQS event source mapping. */
const MAPPING_ACTIONS = ['ReceiveMessage', 'DeleteMessage', 'GetQueueAttributes'] as const;

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
      authorizeIam: (method, path) => {
        const caller = iamSession?.principal(READ_API_CALLER);
        if (!iamSession || !caller) return true;
        const arn = `arn:aws:execute-api:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:${LOCAL_API_ID}/$default/${method}${path}`;
        try {
          iamSession.authorize(caller, 'execute-api:Invoke', arn);
          return true;
        } catch {
          return false;
        }
      },
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
        ...(allowedSourceCidrs === undefined ? {} : { AllowedSourceCidrs: allowedSourceCidrs }),
        ...(env.LOG_LEVEL?.trim() ? { LogLevel: env.LOG_LEVEL.trim() } : {}),
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
    const session = new IamSession({ region: LOCAL_REGION, accountId: LOCAL_ACCOUNT_ID }, (denial) =>
      log.warn('iam_denied', { ...denial }),
    );
    const useRolesOf = (next: Template) =>
      setPrincipals(session, next, account, settings, (fn, policy) =>
        log.warn('iam_policy_unknown', { function: fn, policy, effect: 'it grants nothing locally' }),
      );
    useRolesOf(template);
    if (iamEnforced) {
      iamSession = session;
      setIamSession(session);
      // Lambda refuses to create the mapping when the role cannot consume the queue.
      const principal = session.principal(mappedFunction.key)!;
      for (const action of MAPPING_ACTIONS) {
        try {
          session.authorize(principal, `sqs:${action}`, queue.arn);
        } catch (err) {
          throw new Error(
            `Invalid request provided: The provided execution role does not have permissions to call ${action} ` +
              `on SQS (${(err as Error).message})`,
          );
        }
      }
    }

    const extensionPort = await secretsExtensionPort();
    const parameters = new Map<string, string>();
    const handlers = await loadDeployedHandlers(
      {
        AWS_REGION: LOCAL_REGION,
        AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
        AWS_ENDPOINT_URL_SQS: sqsEndpoint,
        AWS_ENDPOINT_URL_DYNAMODB: dynamoEndpoint,
        AWS_ENDPOINT_URL_SNS: sqsEndpoint,
        // What a function sends the secrets extension, as on Lambda.
        AWS_SESSION_TOKEN: LOCAL_SESSION_TOKEN,
      },
      settings.functions.map((fn) => {
        const environment = { ...fn.environment };
        // A plain value of the template may be tried out from the shell; references are the stack's own.
        for (const name of fn.literalVariables) {
          const own = env[name];
          if (own !== undefined && own.trim() !== '') environment[name] = own;
        }
        const parameter = environment.CALLBACK_SECRETS_PARAM;
        if (parameter !== undefined && fn.layers.some(isSecretsExtensionLayer)) {
          // The extension of its layer, run by the stack: the parameter holds the local secrets, read under
          // the function's role.
          environment.PARAMETERS_SECRETS_EXTENSION_HTTP_PORT = String(extensionPort);
          parameters.set(parameter, secrets.json);
          serveSecrets({
            functionKey: fn.key,
            iam: iamEnforced ? session : undefined,
            parameters,
            region: LOCAL_REGION,
            accountId: LOCAL_ACCOUNT_ID,
          });
          servingSecrets = true;
        } else if (parameter !== undefined) {
          // No extension to read it with: the secrets themselves, in the variable the ingest reads instead.
          delete environment.CALLBACK_SECRETS_PARAM;
          environment.CALLBACK_SECRETS = secrets.json;
        }
        return { key: fn.key, exportName: fn.exportName, environment };
      }),
      // The ingest keeps the secrets it read; a digest, never the secrets, tells two stacks' apart.
      { secrets: createHash('sha256').update(secrets.json).digest('hex') },
    );
    invokers = Object.fromEntries(
      settings.functions.map((fn) => [
        fn.key,
        localFunction({
          settings: fn,
          handler: handlers[fn.key]!,
          log,
          ...(iamEnforced ? { iam: session } : {}),
          logGroupName: `/aws/lambda/${fn.functionName}`,
          region: LOCAL_REGION,
          accountId: LOCAL_ACCOUNT_ID,
        }),
      ]),
    );
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
