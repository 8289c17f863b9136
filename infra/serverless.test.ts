// Packages the service exactly as a deploy would (`npm run build`, then `serverless package`), offline and
// without AWS credentials, and checks the CloudFormation template it produces: every resource the
// deployment relies on, its key settings, each function's IAM statements, the routes, and that the code
// osls uploads is the esbuild bundle.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateRawSync } from 'node:zlib';
import { API_ROUTE_KEYS } from '../lib/api/routes.ts';
import { wildcardMatch } from '../devkit/local/iam/policy.ts';
import { DELIVERY_PREFIX } from '../lib/aws/dynamo/table/table.ts';
import { ARCHIVE_COLUMNS, partitionOf } from '../lib/domain/archive.ts';
import { SERVICES } from '../lib/platform/services.ts';
import { documentedRoutes } from '../test/support/openapi.ts';
import {
  bundleRequestsOfEach,
  functionBuildOptions,
  iamAction,
  type BundleRequests,
} from '../test/support/sdk-requests.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const execFileAsync = promisify(execFile);
const service = 'rtc-callbacks-receiver';
const stage = 'ci';
const region = 'eu-west-1';
const functionNames = ['ingest', 'worker', 'api', 'sweeper', 'verifier'] as const;
/** The durations of the facts of time, from their stage parameters: the worker and the sweeper read the same. */
const timeVariables = {
  SETTLE_AFTER: { Ref: 'SettleAfter' },
  PURGE_WARNING_BEFORE: { Ref: 'PurgeWarningBefore' },
  STALL_FACTOR: { Ref: 'StallFactor' },
  STALL_MIN: { Ref: 'StallMin' },
  STALL_UNKNOWN: { Ref: 'StallUnknown' },
};
const roleIds = ['ApiRole', 'IngestRole', 'SweeperRole', 'VerifierRole', 'WorkerRole'];
/** The roles of the stack that no function runs as: the archive stream's (infra/archive.yml). */
const serviceRoleIds = ['ArchiveDeliveryRole'];
/** A condition that holds a role's table actions to delivery items (lib/aws/dynamo/table/table.ts DELIVERY_PREFIX). */
const deliveryItemsOnly = { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${DELIVERY_PREFIX}*`] } };

type Json = any;
interface Resource {
  Type: string;
  Properties: Json;
  DependsOn?: string | string[];
  Condition?: string;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
}
interface Template {
  Resources: Record<string, Resource>;
  Outputs: Record<string, { Value: Json }>;
  Parameters: Record<string, Json>;
  Conditions: Record<string, Json>;
  Rules: Record<string, Json>;
}
interface Statement {
  Sid?: string;
  Effect: string;
  Action: string | string[];
  Resource: Json;
  Condition?: Json;
}

let template: Template;
let state: Json;
let packageDir: string;
let networkAttempts: string;
/**
 * The packagings with other stage parameters, queued after the main one while the tests of the main template
 * run: each test awaits its own. `variant` sets every parameter of a kind the main packaging leaves at its default (a
 * development stage with signatureMode off, throttling limits, its own layer and operators): they change different
 * resources, so that one packaging holds each of their outcomes.
 */
let variant: Promise<Template>;
let refusals: Record<'signatureOff' | 'throttle', Promise<string>>;

/** The extension layer pinned for the region packaged (infra/secrets-extension-layers.cjs), and a stage's own. */
const PINNED_LAYER =
  'arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:101';
const STAGE_LAYER = 'arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:90';
/** A stage's storages: two buckets of its own, an S3-compatible storage's keys in a parameter, one in a secret. */
const STORAGE = {
  'app-1': { type: 's3', bucket: 'acme-recordings' },
  'app-2': { type: 's3', bucket: 'acme-shots', region: 'eu-central-1', probe: true },
  'app-3': {
    type: 's3-compatible',
    endpoint: 'https://oss-cn-hangzhou.aliyuncs.com',
    bucket: 'acme-oss',
    credentials: { parameter: '/acme/oss-keys' },
  },
  'app-4': {
    type: 's3-compatible',
    endpoint: 'https://cos.ap-guangzhou.myqcloud.com',
    bucket: 'acme-cos',
    credentials: { secret: 'acme/cos-keys' },
  },
  'app-5': { type: 'http' },
};
/** Operators' roles a stage lets send to the callback queue (to redrive dead letters). */
const OPERATORS = ['arn:aws:iam::123456789012:role/operators', 'arn:aws:iam::123456789012:role/aws-reserved/sso/*'];

/** The stage parameters of the variant packaging. */
const VARIANT_PARAMS = {
  development: ['signatureMode=off', 'development=true'],
  throttling: ['callbackRateLimit=2.5', 'callbackBurstLimit= 7 ', 'readRateLimit=0.5', 'readBurstLimit=3'],
  functions: [`paramsSecretsLayerArn=${STAGE_LAYER}`, 'ingestReservedConcurrency=20'],
  operators: [`callbackQueueSenders=${OPERATORS.join(',')}`],
  storage: [`storageSettings=${JSON.stringify(STORAGE)}`],
  archive: ['rawRetentionDays=3', 'archiveRetentionDays=30', 'archiveQueryLimitGb=0.5'],
};

/** Records any attempt to open a network connection of the process that imports it, in its NETWORK_LOG. */
function writeDenyNetworkPreload(): string {
  const preload = join(packageDir, 'deny-network.mjs');
  writeFileSync(
    preload,
    `import net from 'node:net'; import { appendFileSync } from 'node:fs';
const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  const o = typeof first === 'object' && first !== null ? first : { port: first, host: args[1] };
  if (!o.path) appendFileSync(process.env.NETWORK_LOG, (o.host ?? 'localhost') + ':' + o.port + '\\n');
  return connect.apply(this, args);
};\n`,
  );
  return preload;
}

/** Runs with no AWS credentials or configuration at all, and records any attempt to open a network connection. */
function offlineEnv(networkLog: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('AWS_') && !key.startsWith('SLS_') && !key.startsWith('SERVERLESS_')) env[key] = value;
  }
  return {
    ...env,
    AWS_SHARED_CREDENTIALS_FILE: join(packageDir, 'no-credentials'),
    AWS_CONFIG_FILE: join(packageDir, 'no-config'),
    AWS_EC2_METADATA_DISABLED: 'true',
    NODE_OPTIONS: `--import=${join(packageDir, 'deny-network.mjs')}`,
    NETWORK_LOG: networkLog,
  };
}

/** The packagings one after the other: osls keeps its work in the service's folder, whatever `--package` says. */
let packagings: Promise<unknown> = Promise.resolve();

/** `serverless package` with these stage parameters into `<packageDir>/<name>`, offline; the template. */
function packageService(name: string, params: string[]): Promise<Template> {
  const packaged = packagings.then(() => packageNow(name, params));
  packagings = packaged.catch(() => undefined);
  return packaged;
}

async function packageNow(name: string, params: string[]): Promise<Template> {
  const networkLog = join(packageDir, `${name}-network.log`);
  writeFileSync(networkLog, '');
  const out = join(packageDir, name);
  await execFileAsync(
    process.execPath,
    [
      join(root, 'node_modules/osls/bin/serverless.js'),
      'package',
      '--stage',
      stage,
      '--region',
      region,
      '--package',
      out,
      ...params.flatMap((p) => ['--param', p]),
    ],
    { cwd: root, env: offlineEnv(networkLog), encoding: 'utf8' },
  );
  networkAttempts += readFileSync(networkLog, 'utf8');
  return JSON.parse(readFileSync(join(out, 'cloudformation-template-update-stack.json'), 'utf8'));
}

/** What packaging with these stage parameters prints when it fails (it must fail). */
async function packagingError(name: string, params: string[]): Promise<string> {
  try {
    await packageService(name, params);
  } catch (err) {
    return `${(err as { stdout?: string }).stdout ?? ''}${(err as { stderr?: string }).stderr ?? ''}`;
  }
  throw new Error(`packaging with ${params.join(' ')} succeeded`);
}

/** A packaging whose test may be left out (jest -t): its failure is that test's, never an unhandled rejection. */
function started<T>(packaging: Promise<T>): Promise<T> {
  packaging.catch(() => undefined);
  return packaging;
}

/**
 * The stage parameters as infra/stage-params.cjs resolves them for osls (`${file(...)}`), called here with
 * the defaults of serverless.yml and `params` over them: its refusals, without packaging once for each.
 */
async function resolveStageParams(params: Record<string, string>): Promise<Record<string, unknown>> {
  const resolver = createRequire(import.meta.url)('./stage-params.cjs') as (ctx: {
    resolveVariable: (name: string) => Promise<unknown>;
  }) => Promise<Record<string, unknown>>;
  const values: Record<string, string> = {
    development: 'false',
    signatureMode: 'enforce',
    callbackRateLimit: '100',
    callbackBurstLimit: '200',
    readRateLimit: '20',
    readBurstLimit: '40',
    paramsSecretsLayerArn: '',
    ingestReservedConcurrency: '',
    callbackQueueSenders: '',
    region,
    ...params,
  };
  return resolver({
    resolveVariable: async (name) => values[name === 'self:provider.region' ? 'region' : name.replace(/^param:/, '')],
  });
}

beforeAll(async () => {
  packageDir = mkdtempSync(join(tmpdir(), 'sls-package-'));
  writeDenyNetworkPreload();
  const { buildAll } = (await import(new URL('../scripts/build.mjs', import.meta.url).href)) as {
    buildAll: (o: { quiet: boolean }) => Promise<unknown>;
  };
  await buildAll({ quiet: true });
  networkAttempts = '';
  const main = packageService('out', [
    'signatureMode=report',
    'alarmEmail=ops@example.com',
    'allowedSourceCidrs=203.0.113.0/24,2001:db8::/32',
  ]);
  variant = started(packageService('variant', Object.values(VARIANT_PARAMS).flat()));
  refusals = {
    signatureOff: started(packagingError('refused', ['signatureMode=off'])),
    throttle: started(packagingError('refused-throttle', ['callbackBurstLimit=1.5'])),
  };
  template = await main;
  state = JSON.parse(readFileSync(join(packageDir, 'out', 'serverless-state.json'), 'utf8'));
}, 180_000);

afterAll(async () => {
  // The packagings still running end before their folder goes.
  await Promise.allSettled([variant, ...Object.values(refusals ?? {})]);
  if (packageDir) rmSync(packageDir, { recursive: true, force: true });
});

function resource(logicalId: string, type: string): Resource {
  const r = template.Resources[logicalId];
  if (!r) throw new Error(`resource ${logicalId} is missing from the template`);
  expect(r.Type).toBe(type);
  return r;
}

function resourcesOfType(type: string): Array<[string, Resource]> {
  return Object.entries(template.Resources).filter(([, r]) => r.Type === type);
}

function statementsOf(roleId: string): Statement[] {
  const role = resource(roleId, 'AWS::IAM::Role');
  expect(role.Properties.ManagedPolicyArns).toBeUndefined();
  return role.Properties.Policies.flatMap((p: Json) => p.PolicyDocument.Statement as Statement[]);
}

const actions = (s: Statement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]).slice().sort();
const getAtt = (id: string, attr = 'Arn') => ({ 'Fn::GetAtt': [id, attr] });
const ref = (id: string) => ({ Ref: id });
/** What the worker does on the table: by key, a task partition's query, the header update, bucket entries at once. */
const WORKER_TABLE_ACTIONS = [
  'dynamodb:BatchGetItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:Query',
  'dynamodb:UpdateItem',
];

describe('packaging', () => {
  test('runs offline, without AWS credentials', () => {
    expect(networkAttempts).toBe(''); // no connection attempted (see offlineEnv)
    expect(Object.keys(template.Resources).length).toBeGreaterThan(20);
  });

  test('each function ships the zip of its esbuild bundle: index.mjs exporting handler', () => {
    for (const name of functionNames) {
      const fn = state.service.functions[name];
      expect(fn.handler).toBe('index.handler');
      expect(fn.package.artifact).toBe(`dist/${name}.zip`);
      const code = template.Resources[`${name[0]!.toUpperCase()}${name.slice(1)}LambdaFunction`]!.Properties.Code;
      expect(basename(code.S3Key)).toBe(`${name}.zip`);

      const entries = readZip(readFileSync(join(root, 'dist', `${name}.zip`)));
      expect([...entries.keys()]).toEqual(['index.mjs']);
      const bundle = readFileSync(join(root, 'dist', name, 'index.mjs'));
      expect(entries.get('index.mjs')!.equals(bundle)).toBe(true);
      expect(bundle.toString('utf8')).toMatch(
        /export\s*\{[^}]*\bas handler\b[^}]*\}|export\s*\{[^}]*\bhandler\b[^}]*\}/,
      );
    }
  });
});

describe('functions', () => {
  test('ingest: nodejs24.x on arm64, its own role, the secrets extension layer and its settings', () => {
    const fn = resource('IngestLambdaFunction', 'AWS::Lambda::Function').Properties;
    expect(fn.Runtime).toBe('nodejs24.x');
    expect(fn.Architectures).toEqual(['arm64']);
    expect(fn.Handler).toBe('index.handler');
    expect(fn.MemorySize).toBe(256);
    expect(fn.Timeout).toBe(6);
    expect(fn.Role).toEqual(getAtt('IngestRole'));
    // Pinned for the region: a deploy never takes a newer extension by itself.
    expect(fn.Layers).toEqual([PINNED_LAYER]);
    // No concurrency reserved unless the stage says so: a new account's quota may leave none to reserve.
    expect(fn.ReservedConcurrentExecutions).toEqual(ref('AWS::NoValue'));
    expect(fn.Environment.Variables).toEqual({
      QUEUE_URL: ref('CallbackFifoQueue'),
      TASKS_TABLE: ref('TasksTable'),
      RAW_EVENT_TTL_DAYS: ref('RawRetentionDays'),
      SIGNATURE_MODE: ref('SignatureMode'),
      DEVELOPMENT_STAGE: ref('Development'),
      SIGNATURE_TOLERANCE_S: '300',
      MAX_BODY_BYTES: '65536',
      ALLOWED_SOURCE_CIDRS: { 'Fn::If': ['HasAllowedSourceCidrs', ref('AllowedSourceCidrs'), ref('AWS::NoValue')] },
      CALLBACK_SECRETS_PARAM: ref('CallbackSecretsParamName'),
      SECRETS_REFRESH_S: '300',
      LOG_LEVEL: ref('LogLevel'),
      SSM_PARAMETER_STORE_TTL: '60',
    });
  });

  test('worker: nodejs24.x on arm64, its own role, the table and its settings', () => {
    const fn = resource('WorkerLambdaFunction', 'AWS::Lambda::Function').Properties;
    expect(fn.Runtime).toBe('nodejs24.x');
    expect(fn.Architectures).toEqual(['arm64']);
    expect(fn.Handler).toBe('index.handler');
    expect(fn.MemorySize).toBe(256);
    expect(fn.Timeout).toBe(30);
    expect(fn.Role).toEqual(getAtt('WorkerRole'));
    expect(fn.Layers).toBeUndefined();
    expect(fn.Environment.Variables).toEqual({
      TASKS_TABLE: ref('TasksTable'),
      RAW_EVENT_TTL_DAYS: ref('RawRetentionDays'),
      LOG_LEVEL: ref('LogLevel'),
      TASK_EVENTS_TOPIC_ARN: ref('TaskEventsTopic'),
      QUEUE_MAX_RECEIVE_COUNT: '5',
      ARCHIVE_STREAM: ref('ArchiveStream'),
      ...timeVariables,
    });
    // The worker gives a record up at the queue's last receive: the two numbers are one.
    const queue = resource('CallbackFifoQueue', 'AWS::SQS::Queue').Properties;
    expect(String(queue.RedrivePolicy.maxReceiveCount)).toBe(fn.Environment.Variables.QUEUE_MAX_RECEIVE_COUNT);
  });

  test('sweeper: nodejs24.x on arm64, its own role, on the schedule of its stage parameter, the durations', () => {
    const fn = resource('SweeperLambdaFunction', 'AWS::Lambda::Function').Properties;
    expect(fn.Runtime).toBe('nodejs24.x');
    expect(fn.Architectures).toEqual(['arm64']);
    expect(fn.Role).toEqual(getAtt('SweeperRole'));
    expect(fn.Timeout).toBe(120);
    expect(fn.Environment.Variables).toEqual({
      TASKS_TABLE: ref('TasksTable'),
      TASK_EVENTS_TOPIC_ARN: ref('TaskEventsTopic'),
      LOG_LEVEL: ref('LogLevel'),
      ...timeVariables,
    });
    // The sweeper's schedule, and the verifier's (its sweep of the storage incidents), the same.
    const rules = resourcesOfType('AWS::Events::Rule');
    expect(rules.map(([, r]) => r.Properties.ScheduleExpression)).toEqual(['rate(5 minutes)', 'rate(5 minutes)']);
    const targets = rules.flatMap(([, r]) => r.Properties.Targets.map((t: Json) => t.Arn));
    expect(targets).toHaveLength(2);
    expect(targets).toEqual(
      expect.arrayContaining([getAtt('SweeperLambdaFunction', 'Arn'), getAtt('VerifierLambdaFunction', 'Arn')]),
    );
    for (const [name, value] of Object.entries({
      SettleAfter: '10m',
      PurgeWarningBefore: '2h',
      StallFactor: '3',
      StallMin: '15m',
      StallUnknown: '6h',
    }))
      expect(template.Parameters[name].Default).toBe(value);
  });

  test('verifier: nodejs24.x on arm64, its own role, fed by its queue, the storage settings of its stage', () => {
    const fn = resource('VerifierLambdaFunction', 'AWS::Lambda::Function').Properties;
    expect(fn.Runtime).toBe('nodejs24.x');
    expect(fn.Architectures).toEqual(['arm64']);
    expect(fn.Role).toEqual(getAtt('VerifierRole'));
    expect(fn.Timeout).toBe(20);
    // The extension reads the access keys of S3-compatible storages.
    expect(fn.Layers).toEqual([PINNED_LAYER]);
    expect(fn.Environment.Variables).toEqual({
      TASKS_TABLE: ref('TasksTable'),
      TASK_EVENTS_TOPIC_ARN: ref('TaskEventsTopic'),
      STORAGE_SETTINGS: ref('StorageSettings'),
      VERIFY_TIMEOUT: '5s',
      VERIFY_MAX_RECEIVE_COUNT: '5',
      LOG_LEVEL: ref('LogLevel'),
    });
    const queue = resource('VerifyQueue', 'AWS::SQS::Queue').Properties;
    // A silent storage is asked again until the queue's last receive: the two numbers are one.
    expect(String(queue.RedrivePolicy.maxReceiveCount)).toBe(fn.Environment.Variables.VERIFY_MAX_RECEIVE_COUNT);
    expect(queue.RedrivePolicy.deadLetterTargetArn).toEqual(getAtt('VerifyDeadLetterQueue'));
    expect(queue.VisibilityTimeout).toBe(6 * fn.Timeout);
    expect(queue.SqsManagedSseEnabled).toBe(true);
    const mappings = resourcesOfType('AWS::Lambda::EventSourceMapping').filter(
      ([, m]) => JSON.stringify(m.Properties.FunctionName) === JSON.stringify(getAtt('VerifierLambdaFunction')),
    );
    expect(mappings.map(([, m]) => [m.Properties.EventSourceArn, m.Properties.FunctionResponseTypes])).toEqual([
      [getAtt('VerifyQueue'), ['ReportBatchItemFailures']],
    ]);
    // The queue is fed by the task-events topic, file.uploaded only, raw; what SNS cannot deliver is kept.
    const subscriptions = resourcesOfType('AWS::SNS::Subscription')
      .map(([, s]) => s.Properties)
      .filter((s) => JSON.stringify(s.TopicArn) === JSON.stringify(ref('TaskEventsTopic')));
    expect(subscriptions).toEqual([
      {
        TopicArn: ref('TaskEventsTopic'),
        Protocol: 'sqs',
        Endpoint: getAtt('VerifyQueue'),
        RawMessageDelivery: true,
        FilterPolicy: { type: ['file.uploaded', 'file.upload_failed'] },
        RedrivePolicy: { deadLetterTargetArn: getAtt('VerifyDeadLetterQueue') },
      },
    ]);
    const policy = resource('VerifyQueuesPolicy', 'AWS::SQS::QueuePolicy').Properties.PolicyDocument.Statement;
    expect(policy[1]).toEqual({
      Sid: 'TaskEventsTopicDelivers',
      Effect: 'Allow',
      Principal: { Service: 'sns.amazonaws.com' },
      Action: 'sqs:SendMessage',
      Resource: [getAtt('VerifyQueue'), getAtt('VerifyDeadLetterQueue')],
      Condition: { ArnEquals: { 'aws:SourceArn': ref('TaskEventsTopic') } },
    });
    // No storage named: no grant on any.
    expect(template.Parameters.StorageSettings.Default).toBe('{}');
    expect(template.Resources.VerifierStoragePolicy).toBeUndefined();
  });

  test("the verifier's storage grants are its stage's storages': their buckets' objects, their keys", async () => {
    const t = await variant;
    expect(JSON.parse(t.Parameters.StorageSettings.Default)).toEqual(STORAGE);
    const policy = t.Resources.VerifierStoragePolicy!;
    expect(policy.Type).toBe('AWS::IAM::Policy');
    expect(policy.Properties.Roles).toEqual([ref('VerifierRole')]);
    const sub = (text: string) => ({ 'Fn::Sub': text });
    const parameter = sub('arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/acme/oss-keys');
    expect(policy.Properties.PolicyDocument.Statement).toEqual([
      {
        Sid: 'CheckStoredFiles',
        Effect: 'Allow',
        Action: 's3:GetObject',
        Resource: [sub('arn:${AWS::Partition}:s3:::acme-recordings/*'), sub('arn:${AWS::Partition}:s3:::acme-shots/*')],
      },
      // The probe of the one bucket whose setting allows it: the bucket, and its canary objects only.
      {
        Sid: 'ProbeStorageBuckets',
        Effect: 'Allow',
        Action: 's3:ListBucket',
        Resource: [sub('arn:${AWS::Partition}:s3:::acme-shots')],
      },
      {
        Sid: 'ProbeStorageCanaries',
        Effect: 'Allow',
        Action: ['s3:DeleteObject', 's3:PutObject'],
        Resource: [sub('arn:${AWS::Partition}:s3:::acme-shots/.rtc-callbacks-receiver-probe/*')],
      },
      { Sid: 'ReadStorageKeysParameters', Effect: 'Allow', Action: 'ssm:GetParameter', Resource: [parameter] },
      {
        Sid: 'DecryptStorageKeysParameters',
        Effect: 'Allow',
        Action: 'kms:Decrypt',
        Resource: sub('arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:key/*'),
        Condition: {
          StringEquals: {
            'kms:ViaService': sub('ssm.${AWS::Region}.${AWS::URLSuffix}'),
            'kms:EncryptionContext:PARAMETER_ARN': [parameter],
          },
        },
      },
      {
        Sid: 'ReadStorageKeysSecrets',
        Effect: 'Allow',
        Action: 'secretsmanager:GetSecretValue',
        Resource: [
          sub('arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:acme/cos-keys-??????'),
        ],
      },
    ]);
  });

  test("the sweeper kept Lambda's two asynchronous retries, which overlap its next run: it gets none", () => {
    const configs = resourcesOfType('AWS::Lambda::EventInvokeConfig');
    // The verifier's scheduled sweeps of the storage incidents neither.
    expect(configs).toHaveLength(2);
    expect(configs.map(([, c]) => c.Properties)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ FunctionName: ref('SweeperLambdaFunction'), MaximumRetryAttempts: 0 }),
        expect.objectContaining({ FunctionName: ref('VerifierLambdaFunction'), MaximumRetryAttempts: 0 }),
      ]),
    );
  });

  test('the extension layer followed the latest version at every deploy: pinned, per stage if it says so', async () => {
    const stageOwn = await variant;
    expect(stageOwn.Resources.IngestLambdaFunction!.Properties.Layers).toEqual([STAGE_LAYER]);
    // Each pinned layer is an arm64 layer of the extension in its own region.
    const pinned = createRequire(import.meta.url)('./secrets-extension-layers.cjs') as Record<string, string>;
    for (const [where, arn] of Object.entries(pinned)) {
      expect(arn).toMatch(
        new RegExp(
          `^arn:aws[a-z-]*:lambda:${where}:\\d{12}:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:\\d+$`,
        ),
      );
    }
    await expect(resolveStageParams({ region: 'xx-nowhere-1' })).rejects.toThrow(
      /^No secrets extension layer is pinned for region xx-nowhere-1: give one with --param paramsSecretsLayerArn=/,
    );
    await expect(resolveStageParams({ paramsSecretsLayerArn: 'latest' })).rejects.toThrow(
      /^Stage parameter paramsSecretsLayerArn must be a layer version ARN/,
    );
  });

  test('no function had reserved concurrency: the ingest reserves what its stage parameter says', async () => {
    const reserving = await variant;
    expect(reserving.Resources.IngestLambdaFunction!.Properties.ReservedConcurrentExecutions).toBe(20);
    for (const name of ['Worker', 'Sweeper', 'Api'])
      expect(template.Resources[`${name}LambdaFunction`]!.Properties.ReservedConcurrentExecutions).toBeUndefined();
    for (const bad of ['0', '-5', '2.5', 'lots'])
      await expect(resolveStageParams({ ingestReservedConcurrency: bad })).rejects.toThrow(
        `Stage parameter ingestReservedConcurrency must be a whole number above 0, or empty for none, not "${bad}".`,
      );
  });

  test('api: nodejs24.x on arm64, its own role, the table and its settings', () => {
    const fn = resource('ApiLambdaFunction', 'AWS::Lambda::Function').Properties;
    expect(fn.Runtime).toBe('nodejs24.x');
    expect(fn.Architectures).toEqual(['arm64']);
    expect(fn.Handler).toBe('index.handler');
    expect(fn.MemorySize).toBe(256);
    // Above the handler's own deadline for DynamoDB (8 s, lib/api/config.ts): it always answers itself.
    expect(fn.Timeout).toBe(10);
    expect(fn.Role).toEqual(getAtt('ApiRole'));
    expect(fn.Layers).toBeUndefined();
    expect(fn.Environment.Variables).toEqual({
      TASKS_TABLE: ref('TasksTable'),
      RAW_EVENT_TTL_DAYS: ref('RawRetentionDays'),
      LOG_LEVEL: ref('LogLevel'),
    });
  });

  test('stage parameters become the deploy-time defaults, checked by CloudFormation', () => {
    expect(template.Parameters.SignatureMode).toMatchObject({
      Default: 'report',
      AllowedValues: ['enforce', 'report', 'off'],
    });
    expect(template.Parameters.CallbackSecretsParamName.Default).toBe(`/${service}/${stage}/callback-secrets`);
    expect(new RegExp(template.Parameters.CallbackSecretsParamName.AllowedPattern).test('no-leading-slash')).toBe(
      false,
    );
    expect(template.Parameters.AlarmEmail.Default).toBe('ops@example.com');
    expect(new RegExp(template.Parameters.AlarmEmail.AllowedPattern).test('')).toBe(true);
    expect(template.Parameters.LogLevel.Default).toBe('info');
    expect(template.Parameters.Development).toMatchObject({ Default: 'false', AllowedValues: ['true', 'false'] });
    const cidrs = template.Parameters.AllowedSourceCidrs;
    expect(cidrs.Default).toBe('203.0.113.0/24,2001:db8::/32');
    expect(new RegExp(cidrs.AllowedPattern).test('')).toBe(true);
    expect(new RegExp(cidrs.AllowedPattern).test('10.0.0.0/8, ::ffff:10.0.0.0/104')).toBe(true);
    expect(new RegExp(cidrs.AllowedPattern).test('10.0.0.0/8;rm')).toBe(false);
  });

  test(
    'an empty allow-list parameter leaves ALLOWED_SOURCE_CIDRS unset (every address); separators alone are ' +
      'refused, not taken for every address',
    () => {
      const pattern = new RegExp(template.Parameters.AllowedSourceCidrs.AllowedPattern);
      for (const separatorsOnly of [',', ' , ,', ' ']) expect(pattern.test(separatorsOnly)).toBe(false);
      expect(pattern.test('::/0,0.0.0.0/0')).toBe(true);
      // The variable is set only when the parameter holds ranges: set but empty, the ingest refuses to start.
      expect(template.Conditions.HasAllowedSourceCidrs).toEqual({
        'Fn::Not': [{ 'Fn::Equals': [ref('AllowedSourceCidrs'), ''] }],
      });
    },
  );

  test('signature mode off only on a stage marked as development: CloudFormation asserts it on every deploy', () => {
    expect(template.Rules.SignatureModeOffOnlyInDevelopment).toEqual({
      RuleCondition: { 'Fn::Equals': [ref('SignatureMode'), 'off'] },
      Assertions: [
        {
          Assert: { 'Fn::Equals': [ref('Development'), 'true'] },
          AssertDescription: expect.stringMatching(
            /^SignatureMode off .* only on a stage deployed with Development true\.$/,
          ),
        },
      ],
    });
  });

  test('packaging refuses signatureMode=off on a stage not marked as development, in one sentence', async () => {
    const sentence =
      'Stage parameter signatureMode=off accepts unsigned callbacks and is for development stages only: ' +
      'mark the stage with --param development=true, or use enforce or report.';
    // Packaged with development left at its default; marked false, the resolver osls calls refuses the same.
    const stderr = await refusals.signatureOff;
    expect(stderr).toContain(sentence);
    expect(stderr).not.toMatch(/\n\s+at /);
    await expect(resolveStageParams({ signatureMode: 'off', development: 'false' })).rejects.toThrow(sentence);
    const development = await variant;
    expect(development.Parameters.SignatureMode.Default).toBe('off');
    expect(development.Parameters.Development.Default).toBe('true');
  });

  test('the function log groups and the access log keep 30 days', () => {
    const groups = resourcesOfType('AWS::Logs::LogGroup');
    expect(groups.map(([id]) => id).sort()).toEqual([
      'ApiLogGroup',
      'ArchiveDeliveryLogGroup',
      'HttpApiLogGroup',
      'IngestLogGroup',
      'SweeperLogGroup',
      'VerifierLogGroup',
      'WorkerLogGroup',
    ]);
    for (const [, group] of groups) expect(group.Properties.RetentionInDays).toBe(30);
    expect(resource('IngestLogGroup', 'AWS::Logs::LogGroup').Properties.LogGroupName).toBe(
      `/aws/lambda/${service}-${stage}-ingest`,
    );
  });
});

describe('IAM', () => {
  test('each function has its own role and osls creates no shared one', () => {
    expect(template.Resources.IamRoleLambdaExecution).toBeUndefined();
    expect(
      resourcesOfType('AWS::IAM::Role')
        .map(([id]) => id)
        .sort(),
    ).toEqual([...roleIds, ...serviceRoleIds].sort());
    for (const id of roleIds) {
      expect(resource(id, 'AWS::IAM::Role').Properties.AssumeRolePolicyDocument.Statement).toEqual([
        { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
      ]);
    }
  });

  test('ingest: own logs, SendMessage on the main queue, its one parameter and its decryption, its claims', () => {
    const statements = statementsOf('IngestRole');
    const parameterArn = {
      'Fn::Sub': 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${CallbackSecretsParamName}',
    };
    expect(statements.map((s) => [actions(s), s.Resource])).toEqual([
      [['logs:CreateLogStream', 'logs:PutLogEvents'], getAtt('IngestLogGroup')],
      [['sqs:SendMessage'], getAtt('CallbackFifoQueue')],
      [['ssm:GetParameter'], parameterArn],
      [['kms:Decrypt'], { 'Fn::Sub': 'arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:key/*' }],
      [['dynamodb:GetItem', 'dynamodb:PutItem'], getAtt('TasksTable')],
    ]);
    // The replay claim writes and reads delivery items, and no other: every key it may name begins with DLV#.
    expect(statements[4]!.Condition).toEqual(deliveryItemsOnly);
    // A key is matched by its use: only through Parameter Store, only for this parameter.
    expect(statements[3]!.Condition).toEqual({
      StringEquals: {
        'kms:ViaService': { 'Fn::Sub': 'ssm.${AWS::Region}.${AWS::URLSuffix}' },
        'kms:EncryptionContext:PARAMETER_ARN': parameterArn,
      },
    });
  });

  test(
    'worker: own logs, the event source mapping actions on the main queue, item actions, the header update ' +
      '(UpdateItem) and a task partition Query on the table, publishing to the task-events topic through SNS only',
    () => {
      const statements = statementsOf('WorkerRole');
      expect(statements.map((s) => [actions(s), s.Resource])).toEqual([
        [['logs:CreateLogStream', 'logs:PutLogEvents'], getAtt('WorkerLogGroup')],
        [['sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ReceiveMessage'], getAtt('CallbackFifoQueue')],
        [WORKER_TABLE_ACTIONS, getAtt('TasksTable')],
        [['sns:Publish'], ref('TaskEventsTopic')],
        [['kms:Decrypt', 'kms:GenerateDataKey'], getAtt('TopicsKey')],
        [['firehose:PutRecordBatch'], getAtt('ArchiveStream')],
      ]);
      expect(statements[4]!.Condition).toEqual({
        StringEquals: { 'kms:ViaService': { 'Fn::Sub': 'sns.${AWS::Region}.${AWS::URLSuffix}' } },
      });
      // The ingest publishes nothing.
      expect(
        statementsOf('IngestRole')
          .flatMap(actions)
          .filter((a) => a.startsWith('sns:')),
      ).toEqual([]);
    },
  );

  test('task events: a standard SNS topic named after the stage, its ARN in the stack outputs', () => {
    const topic = resource('TaskEventsTopic', 'AWS::SNS::Topic').Properties;
    expect(topic.TopicName).toBe(`${service}-${stage}-task-events`);
    expect(topic.FifoTopic).toBeUndefined();
    expect(template.Outputs.TaskEventsTopicArn!.Value).toEqual(ref('TaskEventsTopic'));
  });

  test('api: own logs, reads of the table by key and by Query, Query on its indexes; nothing else', () => {
    const statements = statementsOf('ApiRole');
    expect(statements.map((s) => [actions(s), s.Resource])).toEqual([
      [['logs:CreateLogStream', 'logs:PutLogEvents'], getAtt('ApiLogGroup')],
      [['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Query'], getAtt('TasksTable')],
      [['dynamodb:Query'], { 'Fn::Sub': '${TasksTable.Arn}/index/*' }],
    ]);
  });

  test('the SigV4 library of the docs is a development dependency, in no function bundle', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(pkg.devDependencies.aws4).toEqual(expect.any(String));
    expect(pkg.dependencies.aws4).toBeUndefined();
    for (const name of functionNames) {
      // A property name of aws4's signer, which minification keeps.
      expect(readFileSync(join(root, 'dist', name, 'index.mjs'), 'utf8')).not.toContain('isCodeCommitGit');
    }
  });

  test(
    "the read API's callers get a managed policy: execute-api:Invoke on its three routes, not the callback " + 'routes',
    () => {
      const policy = resource('ReadApiInvokePolicy', 'AWS::IAM::ManagedPolicy').Properties;
      const arn = (path: string) => ({
        'Fn::Sub': `arn:\${AWS::Partition}:execute-api:\${AWS::Region}:\${AWS::AccountId}:\${HttpApi}/*/${path}`,
      });
      expect(policy.PolicyDocument.Statement).toEqual([
        {
          Sid: 'InvokeReadApi',
          Effect: 'Allow',
          Action: 'execute-api:Invoke',
          Resource: [arn('GET/tasks'), arn('GET/tasks/*')],
        },
      ]);
      // IAM's wildcard matching of the request ARNs (<api>/<stage>/<method>/<path>) each route produces.
      const patterns = (policy.PolicyDocument.Statement[0].Resource as { 'Fn::Sub': string }[]).map(
        (r) =>
          new RegExp(
            `^${r['Fn::Sub']
              .split('${HttpApi}/')[1]!
              .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
              .replaceAll('*', '.*')}$`,
          ),
      );
      const allowed = (method: string, path: string) => patterns.some((p) => p.test(`$default/${method}${path}`));
      for (const path of ['/tasks', '/tasks/rec-1', '/tasks/rec-1/events']) expect(allowed('GET', path)).toBe(true);
      for (const [method, path] of [
        ['POST', '/callbacks/recording'],
        ['POST', '/callbacks/screenshot'],
        ['GET', '/health'],
        ['POST', '/tasks'],
      ])
        expect(allowed(method!, path!)).toBe(false);
    },
  );

  test('no statement allows "*" actions or resources, and every statement allows', () => {
    for (const id of [...roleIds, ...serviceRoleIds]) {
      for (const s of statementsOf(id)) {
        expect(s.Effect).toBe('Allow');
        for (const a of actions(s)) expect(a).not.toMatch(/\*/);
        const resources = Array.isArray(s.Resource) ? s.Resource : [s.Resource];
        for (const r of resources) {
          expect(r).not.toBe('*');
          if (typeof r === 'string') expect(r).toMatch(/^arn:/);
        }
      }
    }
  });
});

/**
 * Every grant a function's role needs, derived from what is deployed rather than written out again: what
 * Lambda does with the role (its logs, an SQS event source, the secrets extension's read of its parameter)
 * from the function's resources, and every request its bundle sends from the bundle esbuild writes, each on
 * the resource the function's environment names for that service. One string per action, resource and
 * condition, so that two lists compare exactly.
 */
describe('IAM: each role grants exactly what its function does, and nothing more', () => {
  const bundles = new Map<string, BundleRequests>();
  /**
   * The items of the table a function's requests may name, when fewer than all: the ingest's are the deliveries
   * it claims signatures with (lib/aws/dynamo/write/delivery-claim.ts).
   */
  const tableItemsOf: Record<string, Json> = { ingest: deliveryItemsOnly };
  /** The environment variable that names the resource a service's requests go to. */
  const resourceVariable: Record<string, string> = {
    dynamodb: 'TASKS_TABLE',
    sqs: 'QUEUE_URL',
    sns: 'TASK_EVENTS_TOPIC_ARN',
    firehose: 'ARCHIVE_STREAM',
  };
  const grant = (action: string, resourceOf: Json, condition?: Json) =>
    JSON.stringify([action, resourceOf, condition ?? null]);

  beforeAll(async () => {
    const options = await functionBuildOptions();
    const built = await bundleRequestsOfEach(
      functionNames.map((name) => join(root, 'functions', `${name}.ts`)),
      options,
      root,
    );
    for (const [i, name] of functionNames.entries()) {
      const requests = built[i]!;
      // What is read here is the very bundle osls uploads.
      expect(requests.code).toBe(readFileSync(join(root, 'dist', name, 'index.mjs'), 'utf8'));
      bundles.set(name, requests);
    }
  }, 120_000);

  function granted(roleId: string): string[] {
    return statementsOf(roleId)
      .flatMap((s) => {
        expect(s.Effect).toBe('Allow');
        const resources = Array.isArray(s.Resource) ? s.Resource : [s.Resource];
        return actions(s).flatMap((a) => resources.map((r: Json) => grant(a, r, s.Condition)));
      })
      .sort();
  }

  /** The grants an SDK request needs, on the resource its service's variable names in the function's environment. */
  function requestGrants(name: string, variables: Record<string, Json>, requests: BundleRequests): string[] {
    return requests.sent.flatMap((command) => {
      const action = iamAction(command);
      if (action === null) return [];
      // The verifier's storages are the stage's: its grants on them are a policy of its own, made of the stage's
      // storage settings (none here; the storage variant below names some).
      if (name === 'verifier' && command.service === 's3') return [];
      const variable = resourceVariable[command.service];
      const named = variable ? variables[variable] : undefined;
      if (!named?.Ref) throw new Error(`${name} sends ${action} but its environment names no resource for it`);
      const target = template.Resources[named.Ref]!;
      if (target.Type === 'AWS::DynamoDB::Table') {
        const table = grant(action, getAtt(named.Ref), tableItemsOf[name]);
        // A Query that names an index needs the grant on the table's indexes.
        const index = grant(action, { 'Fn::Sub': `\${${named.Ref}.Arn}/index/*` });
        return action === 'dynamodb:Query' && requests.namesIndex ? [table, index] : [table];
      }
      if (target.Type === 'AWS::SQS::Queue') return [grant(action, getAtt(named.Ref))];
      // Firehose names a stream by its name in a request, IAM by its ARN.
      if (target.Type === 'AWS::KinesisFirehose::DeliveryStream') return [grant(action, getAtt(named.Ref))];
      if (target.Type === 'AWS::SNS::Topic') {
        const key = target.Properties.KmsMasterKeyId;
        // SNS encrypts what is published with a data key it asks KMS for on the publisher's behalf.
        const viaSns = { StringEquals: { 'kms:ViaService': { 'Fn::Sub': 'sns.${AWS::Region}.${AWS::URLSuffix}' } } };
        const keyUse = key ? ['kms:Decrypt', 'kms:GenerateDataKey'].map((a) => grant(a, key, viaSns)) : [];
        return [grant(action, ref(named.Ref)), ...keyUse];
      }
      throw new Error(`${name} sends ${action} to ${named.Ref}, a ${target.Type} this test does not know`);
    });
  }

  /** What Lambda itself does with the function's role. */
  function platformGrants(functionId: string): string[] {
    const fn = resource(functionId, 'AWS::Lambda::Function').Properties;
    const logGroup = resourcesOfType('AWS::Logs::LogGroup').find(
      ([, g]) => g.Properties.LogGroupName === `/aws/lambda/${fn.FunctionName}`,
    );
    const grants = ['logs:CreateLogStream', 'logs:PutLogEvents'].map((a) => grant(a, getAtt(logGroup![0])));
    // An SQS event source: Lambda polls the queue, deletes what succeeded and reads the queue's attributes.
    for (const [, mapping] of resourcesOfType('AWS::Lambda::EventSourceMapping')) {
      if (JSON.stringify(mapping.Properties.FunctionName) !== JSON.stringify(getAtt(functionId))) continue;
      for (const a of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'])
        grants.push(grant(a, mapping.Properties.EventSourceArn));
    }
    // The Parameters and Secrets extension reads the parameter with decryption, with the function's role.
    const parameter = fn.Environment.Variables.CALLBACK_SECRETS_PARAM;
    if (fn.Layers && parameter) {
      const parameterArn = {
        'Fn::Sub': `arn:\${AWS::Partition}:ssm:\${AWS::Region}:\${AWS::AccountId}:parameter\${${parameter.Ref}}`,
      };
      grants.push(grant('ssm:GetParameter', parameterArn));
      grants.push(
        grant(
          'kms:Decrypt',
          { 'Fn::Sub': 'arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:key/*' },
          {
            StringEquals: {
              'kms:ViaService': { 'Fn::Sub': 'ssm.${AWS::Region}.${AWS::URLSuffix}' },
              'kms:EncryptionContext:PARAMETER_ARN': parameterArn,
            },
          },
        ),
      );
    }
    return grants;
  }

  test.each(functionNames)('%s: the role grants exactly its requests and what Lambda does with it', (name) => {
    const functionId = `${name[0]!.toUpperCase()}${name.slice(1)}LambdaFunction`;
    const fn = resource(functionId, 'AWS::Lambda::Function').Properties;
    const requests = bundles.get(name)!;
    expect(requests.sent.length).toBeGreaterThan(0);
    const expected = [...platformGrants(functionId), ...requestGrants(name, fn.Environment.Variables, requests)];
    expect(granted(fn.Role['Fn::GetAtt'][0])).toEqual([...new Set(expected)].sort());
  });

  test(
    'worker: the role grants dynamodb:UpdateItem on the table, which counts each batch into its task headers ' +
      '(without it every record is denied, redelivered and dead-lettered)',
    () => {
      const worker = bundles.get('worker')!;
      expect(worker.sent.map((c) => `${c.service}:${c.operation}`)).toEqual([
        ...WORKER_TABLE_ACTIONS,
        'firehose:PutRecordBatch',
        'sns:PublishBatch',
      ]);
      expect(granted('WorkerRole')).toContain(grant('dynamodb:UpdateItem', getAtt('TasksTable')));
    },
  );

  test("the worker's bundle names no index: its store is the write side alone, so its role has no index grant", () => {
    expect(bundles.get('worker')!.namesIndex).toBe(false);
    expect(bundles.get('api')!.namesIndex).toBe(true);
    for (const roleId of ['WorkerRole', 'IngestRole']) expect(granted(roleId).join()).not.toContain('/index/');
  });

  test('the SDK commands no code of the project sends are the credential providers and endpoint discovery', () => {
    for (const name of functionNames) {
      // Lambda's credentials are in the environment: the credential providers' clients never send. S3's client keeps
      // a session of its own for directory buckets (S3 Express), which no storage setting names.
      const unexplained = bundles
        .get(name)!
        .sdkOwn.filter(
          (c) =>
            c.package !== '@aws-sdk/nested-clients' &&
            c.operation !== 'DescribeEndpoints' &&
            !(c.package === '@aws-sdk/client-s3' && c.operation === 'CreateSession'),
        );
      expect(unexplained).toEqual([]);
      // Endpoint discovery is off unless enabled: no function enables it.
      const fn = template.Resources[`${name[0]!.toUpperCase()}${name.slice(1)}LambdaFunction`]!.Properties;
      expect(fn.Environment.Variables.AWS_ENABLE_ENDPOINT_DISCOVERY).toBeUndefined();
    }
  });
});

describe('topics: encrypted, published to by the stack alone', () => {
  const accountRoot = { 'Fn::Sub': 'arn:${AWS::Partition}:iam::${AWS::AccountId}:root' };
  const sourceAccount = { StringEquals: { 'aws:SourceAccount': ref('AWS::AccountId') } };

  /** Who a topic's policy lets do what: one entry per allowed action, with the principal and any condition. */
  function topicAllows(topicId: string): Array<{ action: string; principal: Json; condition: Json }> {
    const policies = resourcesOfType('AWS::SNS::TopicPolicy').filter(([, p]) =>
      p.Properties.Topics.some((t: Json) => JSON.stringify(t) === JSON.stringify(ref(topicId))),
    );
    expect(policies).toHaveLength(1);
    return (policies[0]![1].Properties.PolicyDocument.Statement as Array<Statement & { Principal: Json }>).flatMap(
      (st) => {
        expect(st.Effect).toBe('Allow');
        expect(st.Resource).toEqual(ref(topicId));
        return actions(st).map((action) => ({ action, principal: st.Principal, condition: st.Condition ?? null }));
      },
    );
  }

  test('one customer-managed key, rotated, that the account administers and CloudWatch of this account may use', () => {
    const key = resource('TopicsKey', 'AWS::KMS::Key').Properties;
    expect(key.EnableKeyRotation).toBe(true);
    expect(key.KeySpec ?? 'SYMMETRIC_DEFAULT').toBe('SYMMETRIC_DEFAULT'); // SNS takes symmetric keys only
    expect(key.KeyPolicy.Statement).toEqual([
      {
        Sid: 'AccountAdministersKey',
        Effect: 'Allow',
        Principal: { AWS: accountRoot },
        Action: 'kms:*',
        Resource: '*',
      },
      {
        Sid: 'CloudWatchAlarmsPublish',
        Effect: 'Allow',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        Resource: '*',
        Condition: sourceAccount,
      },
    ]);
    expect(resource('TopicsKeyAlias', 'AWS::KMS::Alias').Properties).toEqual({
      AliasName: `alias/${service}-${stage}-topics`,
      TargetKeyId: ref('TopicsKey'),
    });
    expect(template.Outputs.TopicsKeyArn!.Value).toEqual(getAtt('TopicsKey'));
  });

  test('both topics are encrypted with that key, and each has a policy of its own', () => {
    for (const id of ['TaskEventsTopic', 'AlarmTopic'])
      expect(resource(id, 'AWS::SNS::Topic').Properties.KmsMasterKeyId).toEqual(getAtt('TopicsKey'));
    expect(resourcesOfType('AWS::SNS::Topic')).toHaveLength(2);
    expect(resourcesOfType('AWS::SNS::TopicPolicy')).toHaveLength(2);
  });

  test('task events: only the worker, sweeper and verifier roles may publish, the account may subscribe', () => {
    expect(topicAllows('TaskEventsTopic')).toEqual([
      { action: 'sns:Publish', principal: { AWS: getAtt('WorkerRole') }, condition: null },
      { action: 'sns:Publish', principal: { AWS: getAtt('SweeperRole') }, condition: null },
      { action: 'sns:Publish', principal: { AWS: getAtt('VerifierRole') }, condition: null },
      { action: 'sns:Subscribe', principal: { AWS: accountRoot }, condition: null },
    ]);
    // The publisher may use the topic's key (through SNS): the role's grant is on that very key.
    const keyUse = statementsOf('WorkerRole').filter((st) => actions(st).some((a) => a.startsWith('kms:')));
    expect(keyUse.map((st) => [actions(st), st.Resource])).toEqual([
      [
        ['kms:Decrypt', 'kms:GenerateDataKey'],
        resource('TaskEventsTopic', 'AWS::SNS::Topic').Properties.KmsMasterKeyId,
      ],
    ]);
  });

  test('alarms: only CloudWatch alarms of this account may publish, the account may subscribe', () => {
    expect(topicAllows('AlarmTopic')).toEqual([
      {
        action: 'sns:Publish',
        principal: { Service: 'cloudwatch.amazonaws.com' },
        condition: {
          ...sourceAccount,
          ArnLike: {
            'aws:SourceArn': { 'Fn::Sub': 'arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:*' },
          },
        },
      },
      { action: 'sns:Subscribe', principal: { AWS: accountRoot }, condition: null },
    ]);
  });
});

describe('dashboard', () => {
  /** What Fn::Sub puts in for `${Name}` and `${Name.Attribute}`, and the type the name must be of. */
  const substituted: Record<string, string> = {
    'AWS::Region': '',
    HttpApi: 'AWS::ApiGatewayV2::Api',
    IngestLogGroup: 'AWS::Logs::LogGroup',
    WorkerLambdaFunction: 'AWS::Lambda::Function',
    ApiLambdaFunction: 'AWS::Lambda::Function',
    'CallbackFifoQueue.QueueName': 'AWS::SQS::Queue',
    'CallbackFifoDeadLetterQueue.QueueName': 'AWS::SQS::Queue',
    'TaskEventsTopic.TopicName': 'AWS::SNS::Topic',
    ArchiveStream: 'AWS::KinesisFirehose::DeliveryStream',
  };
  const dashboard = () => {
    const all = resourcesOfType('AWS::CloudWatch::Dashboard');
    expect(all).toHaveLength(1);
    return all[0]![1];
  };
  /** The body with each `${...}` of Fn::Sub replaced by `<...>`, parsed. */
  const body = (): Json => {
    const text: string = dashboard().Properties.DashboardBody['Fn::Sub'];
    expect(typeof text).toBe('string');
    return JSON.parse(text.replace(/\$\{([^}]+)\}/g, (_, name: string) => `<${name}>`));
  };
  type Metric = [string, string, ...Json[]];
  const metrics = (): Metric[] => body().widgets.flatMap((w: Json) => (w.properties.metrics ?? []) as Metric[]);
  /** A metric's dimensions, `{QueueName: '<CallbackFifoQueue.QueueName>'}`. */
  const dimensions = (m: Metric): Record<string, string> => {
    const rest = m.slice(2).filter((v) => typeof v === 'string') as string[];
    return Object.fromEntries(rest.flatMap((v, i) => (i % 2 === 0 ? [[v, rest[i + 1]!]] : [])));
  };
  const find = (namespace: string, name: string) => metrics().filter((m) => m[0] === namespace && m[1] === name);

  test("one dashboard named after the stage; each name Fn::Sub puts in is one of the stage's resources", () => {
    expect(dashboard().Properties.DashboardName).toBe(`${service}-${stage}`);
    const text: string = dashboard().Properties.DashboardBody['Fn::Sub'];
    // osls resolved its own variables; what is left is for Fn::Sub.
    expect(text).not.toMatch(/\$\{(self|sls|param|opt):/);
    const names = new Set([...text.matchAll(/\$\{([^}]+)\}/g)].map((m) => m[1]!));
    expect([...names].sort()).toEqual(Object.keys(substituted).sort());
    for (const name of names) {
      if (name.startsWith('AWS::')) continue;
      resource(name.split('.')[0]!, substituted[name]!);
    }
    expect(template.Resources.IngestLogGroup!.Properties.LogGroupName).toBe(`/aws/lambda/${service}-${stage}-ingest`);
  });

  test("its body is JSON, every widget in the stack's region", () => {
    const widgets = body().widgets as Json[];
    expect(widgets.length).toBeGreaterThanOrEqual(8);
    for (const w of widgets) expect(w.properties.region).toBe('<AWS::Region>');
  });

  test('ingest answers by status, from the ingest log group and the HTTP API', () => {
    const log = body().widgets.find((w: Json) => w.type === 'log');
    expect(log.properties.query).toMatch(/^SOURCE '<IngestLogGroup>' \| filter event = 'callback_request' \| stats/);
    expect(log.properties.query).toMatch(/by .*\bstatus\b/);
    for (const code of ['Count', '4xx', '5xx']) {
      expect(find('AWS/ApiGateway', code).map(dimensions)).toEqual([{ ApiId: '<HttpApi>' }]);
    }
  });

  test("the queue's age, dead letters, worker errors, events published, read API latency: the stage's own", () => {
    expect(find('AWS/SQS', 'ApproximateAgeOfOldestMessage').map(dimensions)).toEqual([
      { QueueName: '<CallbackFifoQueue.QueueName>' },
    ]);
    expect(find('AWS/SQS', 'ApproximateNumberOfMessagesVisible').map(dimensions)).toEqual(
      expect.arrayContaining([{ QueueName: '<CallbackFifoDeadLetterQueue.QueueName>' }]),
    );
    expect(find('AWS/Lambda', 'Errors').map(dimensions)).toEqual(
      expect.arrayContaining([{ FunctionName: '<WorkerLambdaFunction>' }, { FunctionName: '<ApiLambdaFunction>' }]),
    );
    expect(find('AWS/SNS', 'NumberOfMessagesPublished').map(dimensions)).toEqual([
      { TopicName: '<TaskEventsTopic.TopicName>' },
    ]);
    const latency = find('AWS/Lambda', 'Duration');
    expect(latency.map(dimensions)).toEqual([
      { FunctionName: '<ApiLambdaFunction>' },
      { FunctionName: '<ApiLambdaFunction>' },
    ]);
    expect(latency.map((m) => m.at(-1).stat)).toEqual(['p50', 'p99']);
  });

  test("the archive: the stream's records in and delivered, its S3 writes and freshness, the worker's failures", () => {
    const stream = { DeliveryStreamName: '<ArchiveStream>' };
    for (const name of [
      'IncomingRecords',
      'DeliveryToS3.Records',
      'DeliveryToS3.Success',
      'DeliveryToS3.DataFreshness',
    ])
      expect({ name, on: find('AWS/Firehose', name).map(dimensions) }).toEqual({ name, on: [stream] });
    expect(find(`${service}/${stage}`, 'FailedArchiveWrites')).toHaveLength(1);
  });

  test("the stage's own log metrics: each is made by one of its metric filters, quarantine among them", () => {
    const namespace = `${service}/${stage}`;
    const filtered = new Map(
      resourcesOfType('AWS::Logs::MetricFilter').flatMap(([, r]) =>
        (r.Properties.MetricTransformations as Json[]).map((t) => [t.MetricName as string, t.MetricNamespace]),
      ),
    );
    const own = metrics().filter((m) => m[0] === namespace);
    expect(own.map((m) => m[1])).toEqual(expect.arrayContaining(['QuarantinedCallbacks', 'RejectedCallbacks']));
    for (const m of own) expect(filtered.get(m[1])).toBe(namespace);
  });
});

describe('HTTP API', () => {
  const routes = () => resourcesOfType('AWS::ApiGatewayV2::Route').map(([, r]) => r.Properties);
  const target = (integration: string) => ({ 'Fn::Join': ['/', ['integrations', ref(integration)]] });

  test('the two callback routes and $default reach the ingest, open to the platform (no authorization)', () => {
    const ingest = routes().filter((r) => !r.RouteKey.startsWith('GET /tasks'));
    expect(ingest.map((r) => r.RouteKey).sort()).toEqual([
      '$default',
      'POST /callbacks/recording',
      'POST /callbacks/screenshot',
    ]);
    for (const r of ingest) {
      expect(r.Target).toEqual(target('HttpApiIntegrationIngest'));
      expect(r.AuthorizationType).toBeUndefined();
    }
  });

  test(
    'the read API routes reach the api function behind the AWS_IAM authorizer, as the code and the OpenAPI ' +
      'document say',
    () => {
      const read = routes().filter((r) => r.RouteKey.startsWith('GET /tasks'));
      const keys = read.map((r) => r.RouteKey).sort();
      expect(keys).toEqual(['GET /tasks', 'GET /tasks/{id}', 'GET /tasks/{id}/events']);
      expect(keys).toEqual([...API_ROUTE_KEYS].sort());
      expect(keys).toEqual(documentedRoutes());
      for (const r of read) {
        expect(r.Target).toEqual(target('HttpApiIntegrationApi'));
        expect(r.AuthorizationType).toBe('AWS_IAM');
      }
    },
  );

  test('one payload 2.0 integration and invoke permission per HTTP function', () => {
    const integrations = Object.fromEntries(
      resourcesOfType('AWS::ApiGatewayV2::Integration').map(([id, r]) => [id, r.Properties]),
    );
    expect(Object.keys(integrations).sort()).toEqual(['HttpApiIntegrationApi', 'HttpApiIntegrationIngest']);
    for (const [id, fn] of [
      ['HttpApiIntegrationIngest', 'IngestLambdaFunction'],
      ['HttpApiIntegrationApi', 'ApiLambdaFunction'],
    ] as const) {
      expect(integrations[id]).toMatchObject({
        IntegrationType: 'AWS_PROXY',
        IntegrationUri: getAtt(fn),
        PayloadFormatVersion: '2.0',
      });
    }
    for (const id of ['IngestLambdaPermissionHttpApi', 'ApiLambdaPermissionHttpApi']) {
      const permission = resource(id, 'AWS::Lambda::Permission').Properties;
      expect(permission).toMatchObject({ Action: 'lambda:InvokeFunction', Principal: 'apigateway.amazonaws.com' });
    }
  });

  test(
    'routes are throttled: each callback route and each read route by its stage parameters, the rest ' + 'tightly',
    () => {
      const stageResource = resource('HttpApiStage', 'AWS::ApiGatewayV2::Stage');
      const props = stageResource.Properties;
      expect(props.StageName).toBe('$default');
      expect(props.DefaultRouteSettings).toMatchObject({ ThrottlingRateLimit: 5, ThrottlingBurstLimit: 10 });
      // Numbers, not strings: RouteSettings reach API Gateway as the template writes them.
      for (const key of ['POST /callbacks/recording', 'POST /callbacks/screenshot']) {
        expect(props.RouteSettings[key]).toStrictEqual({ ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 });
      }
      for (const key of API_ROUTE_KEYS) {
        expect(props.RouteSettings[key]).toStrictEqual({ ThrottlingRateLimit: 20, ThrottlingBurstLimit: 40 });
      }
      expect(Object.keys(props.RouteSettings)).toHaveLength(5);
      // Every route the settings name exists before the stage.
      const routeIds = Object.fromEntries(
        resourcesOfType('AWS::ApiGatewayV2::Route').map(([id, r]) => [r.Properties.RouteKey, id]),
      );
      const dependsOnRoutes = (stageResource.DependsOn as string[]).filter((id) => id.startsWith('HttpApiRoute'));
      expect(dependsOnRoutes.sort()).toEqual(
        Object.keys(props.RouteSettings)
          .map((key) => routeIds[key])
          .sort(),
      );
    },
  );

  test('the throttling stage parameters, strings on the command line, become numbers; others are refused', async () => {
    // VARIANT_PARAMS.throttling
    const custom = await variant;
    const routes = custom.Resources.HttpApiStage!.Properties.RouteSettings;
    for (const key of ['POST /callbacks/recording', 'POST /callbacks/screenshot'])
      expect(routes[key]).toStrictEqual({ ThrottlingRateLimit: 2.5, ThrottlingBurstLimit: 7 });
    for (const key of API_ROUTE_KEYS)
      expect(routes[key]).toStrictEqual({ ThrottlingRateLimit: 0.5, ThrottlingBurstLimit: 3 });
    const refused: [string, string][] = [
      ['callbackRateLimit=0', 'Stage parameter callbackRateLimit must be a positive number, not "0".'],
      ['callbackRateLimit=fast', 'Stage parameter callbackRateLimit must be a positive number, not "fast".'],
      ['callbackBurstLimit=1.5', 'Stage parameter callbackBurstLimit must be a positive whole number, not "1.5".'],
      ['readRateLimit=-1', 'Stage parameter readRateLimit must be a positive number, not "-1".'],
    ];
    // Packaging prints the resolver's sentence (callbackBurstLimit=1.5); the resolver osls calls refuses each.
    expect(await refusals.throttle).toContain(refused[2]![1]);
    for (const [param, sentence] of refused) {
      const [name, value] = param.split('=') as [string, string];
      await expect(resolveStageParams({ [name]: value })).rejects.toThrow(sentence);
    }
  });

  test('access logs: one JSON object per request, numeric status', () => {
    const settings = resource('HttpApiStage', 'AWS::ApiGatewayV2::Stage').Properties.AccessLogSettings;
    expect(settings.DestinationArn).toEqual(getAtt('HttpApiLogGroup'));
    const sample = JSON.parse(settings.Format.replace('$context.status', '429').replace(/\$context\.[A-Za-z.]+/g, 'x'));
    expect(sample).toMatchObject({ requestId: 'x', routeKey: 'x', status: 429 });
  });
});

describe('queues', () => {
  test(
    'main queue: FIFO in high-throughput mode, encrypted, 4 days, redrive after 5 receives, visibility six times ' +
      'the worker time-out',
    () => {
      const q = resource('CallbackFifoQueue', 'AWS::SQS::Queue').Properties;
      const workerTimeout = template.Resources.WorkerLambdaFunction!.Properties.Timeout;
      expect(q.QueueName).toBe(`${service}-${stage}-callbacks.fifo`);
      expect(q.FifoQueue).toBe(true);
      // The ingest names each deduplication id; SendMessage is not capped at 300 a second.
      expect(q.ContentBasedDeduplication).toBe(false);
      expect(q.DeduplicationScope).toBe('messageGroup');
      expect(q.FifoThroughputLimit).toBe('perMessageGroupId');
      expect(q.VisibilityTimeout).toBe(6 * workerTimeout);
      expect(q.MessageRetentionPeriod).toBe(4 * 24 * 3600);
      expect(q.SqsManagedSseEnabled).toBe(true);
      expect(q.RedrivePolicy).toEqual({
        deadLetterTargetArn: getAtt('CallbackFifoDeadLetterQueue'),
        maxReceiveCount: 5,
      });
    },
  );

  test('dead-letter queue: FIFO, encrypted, 14 days, a dead-letter queue for the main queue only', () => {
    const dlq = resource('CallbackFifoDeadLetterQueue', 'AWS::SQS::Queue').Properties;
    expect(dlq.QueueName).toBe(`${service}-${stage}-callbacks-dlq.fifo`);
    expect(dlq.FifoQueue).toBe(true);
    expect(dlq.DeduplicationScope).toBe('messageGroup');
    expect(dlq.FifoThroughputLimit).toBe('perMessageGroupId');
    expect(dlq.MessageRetentionPeriod).toBe(14 * 24 * 3600);
    expect(dlq.SqsManagedSseEnabled).toBe(true);
    expect(dlq.RedriveAllowPolicy).toEqual({
      redrivePermission: 'byQueue',
      sourceQueueArnList: [
        {
          'Fn::Sub': `arn:\${AWS::Partition}:sqs:\${AWS::Region}:\${AWS::AccountId}:${service}-${stage}-callbacks.fifo`,
        },
      ],
    });
  });

  test('both queues refuse unencrypted transport', () => {
    const policy = resource('CallbackQueuesPolicy', 'AWS::SQS::QueuePolicy').Properties;
    expect(policy.Queues).toEqual([ref('CallbackFifoQueue'), ref('CallbackFifoDeadLetterQueue')]);
    expect(policy.PolicyDocument.Statement[0]).toEqual(
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
  });

  test("any principal of the account could inject callbacks: the ingest and the stage's senders only", async () => {
    const INGEST = 'arn:aws:iam::123456789012:role/rtc-callbacks-receiver-ci-ingest';
    /** Whether the queue policy of `t` refuses SendMessage on `queue` to `principal` (its Deny statements). */
    const refuses = (t: Template, action: string, queue: string, principal: string) =>
      (t.Resources.CallbackQueuesPolicy!.Properties.PolicyDocument.Statement as Statement[]).some((st) => {
        if (st.Effect !== 'Deny' || !actions(st).some((a) => wildcardMatch(a, action, true))) return false;
        if (JSON.stringify(st.Resource) !== JSON.stringify(getAtt(queue))) return false;
        const notLike = st.Condition?.ArnNotLike?.['aws:PrincipalArn'] as Json[] | undefined;
        if (!notLike) return false;
        // The role's ARN as CloudFormation puts it in; the others as given.
        const arns = notLike.map((v) => (JSON.stringify(v) === JSON.stringify(getAtt('IngestRole')) ? INGEST : v));
        return !arns.some((arn: string) => wildcardMatch(arn, principal));
      });
    const someone = 'arn:aws:iam::123456789012:role/some-other-function';
    const operator = OPERATORS[0]!;
    const sso = 'arn:aws:iam::123456789012:role/aws-reserved/sso/AWSReservedSSO_Admin_0123';
    expect(refuses(template, 'sqs:SendMessage', 'CallbackFifoQueue', INGEST)).toBe(false);
    expect(refuses(template, 'sqs:SendMessage', 'CallbackFifoQueue', someone)).toBe(true);
    expect(refuses(template, 'sqs:SendMessage', 'CallbackFifoQueue', operator)).toBe(true);
    // The worker still receives and deletes, and the dead-letter queue still takes what the queue dead-letters.
    expect(refuses(template, 'sqs:ReceiveMessage', 'CallbackFifoQueue', someone)).toBe(false);
    expect(refuses(template, 'sqs:SendMessage', 'CallbackFifoDeadLetterQueue', someone)).toBe(false);
    // A stage that names its operators lets them redrive dead letters into the queue, and them only.
    const withOperators = await variant;
    for (const [who, refused] of [
      [INGEST, false],
      [operator, false],
      [sso, false],
      [someone, true],
    ] as const)
      expect({ who, refused: refuses(withOperators, 'sqs:SendMessage', 'CallbackFifoQueue', who) }).toEqual({
        who,
        refused,
      });
    await expect(resolveStageParams({ callbackQueueSenders: 'operators' })).rejects.toThrow(
      /^Stage parameter callbackQueueSenders must list IAM principal ARNs/,
    );
  });

  test('event source mapping: partial batch failures, 10 a batch, no batching window, maximum concurrency', () => {
    // The worker's (the verifier's own is checked with the verifier).
    const mappings = resourcesOfType('AWS::Lambda::EventSourceMapping').filter(
      ([, m]) => JSON.stringify(m.Properties.FunctionName) === JSON.stringify(getAtt('WorkerLambdaFunction')),
    );
    expect(mappings).toHaveLength(1);
    expect(mappings[0]![1].Properties).toEqual({
      EventSourceArn: getAtt('CallbackFifoQueue'),
      FunctionName: getAtt('WorkerLambdaFunction'),
      Enabled: true,
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 10 },
    });
    expect(mappings[0]![1].DependsOn).toContain('WorkerRole');
  });

  test('the FIFO queue and its dead-letter queue are the only queues: no standard queue, output or grant', () => {
    for (const id of ['CallbackQueue', 'CallbackDeadLetterQueue', 'WorkerLegacyQueuePolicy'])
      expect(template.Resources[id]).toBeUndefined();
    expect(template.Outputs.LegacyQueueUrl).toBeUndefined();
    const names = resourcesOfType('AWS::SQS::Queue').map(([, q]) => q.Properties.QueueName);
    expect(names).toEqual([
      `${service}-${stage}-callbacks.fifo`,
      `${service}-${stage}-callbacks-dlq.fifo`,
      `${service}-${stage}-verify`,
      `${service}-${stage}-verify-dlq`,
    ]);
  });
});

describe('table', () => {
  test('keys, four keys-only indexes on sortAt, callbacks by time, on-demand, TTL, PITR, SSE, kept', () => {
    const table = resource('TasksTable', 'AWS::DynamoDB::Table');
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.UpdateReplacePolicy).toBe('Retain');
    const p = table.Properties;
    expect(p.TableName).toBe(`${service}-${stage}-tasks`);
    expect(p.BillingMode).toBe('PAY_PER_REQUEST');
    expect(p.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    const attributeTypes = Object.fromEntries(
      p.AttributeDefinitions.map((a: Json) => [a.AttributeName, a.AttributeType]),
    );
    expect(attributeTypes).toEqual({
      pk: 'S',
      sk: 'S',
      g1pk: 'S',
      g2pk: 'S',
      g3pk: 'S',
      g4pk: 'S',
      sortAt: 'N',
      g5pk: 'S',
      g5sk: 'S',
    });
    const indexes = Object.fromEntries(
      p.GlobalSecondaryIndexes.map((i: Json) => [
        i.IndexName,
        [i.KeySchema.map((k: Json) => `${k.AttributeName}:${k.KeyType}`), i.Projection.ProjectionType],
      ]),
    );
    expect(indexes).toEqual({
      byRoom: [['g1pk:HASH', 'sortAt:RANGE'], 'KEYS_ONLY'],
      bySession: [['g2pk:HASH', 'sortAt:RANGE'], 'KEYS_ONLY'],
      byAppStatus: [['g3pk:HASH', 'sortAt:RANGE'], 'KEYS_ONLY'],
      byDay: [['g4pk:HASH', 'sortAt:RANGE'], 'KEYS_ONLY'],
      byTaskTime: [['g5pk:HASH', 'g5sk:RANGE'], 'ALL'],
    });
    expect(p.TimeToLiveSpecification).toEqual({ AttributeName: 'expiresAt', Enabled: true });
    expect(p.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(p.DeletionProtectionEnabled).toBe(true);
    expect(p.SSESpecification).toEqual({ SSEEnabled: true });
  });
});

describe('operations', () => {
  const namespace = `${service}/${stage}`;

  test('alarm topic with an e-mail subscription only when an address is given', () => {
    resource('AlarmTopic', 'AWS::SNS::Topic');
    const sub = resource('AlarmEmailSubscription', 'AWS::SNS::Subscription');
    expect(sub.Condition).toBe('HasAlarmEmail');
    expect(sub.Properties).toEqual({ TopicArn: ref('AlarmTopic'), Protocol: 'email', Endpoint: ref('AlarmEmail') });
    expect(template.Conditions.HasAlarmEmail).toEqual({ 'Fn::Not': [{ 'Fn::Equals': [ref('AlarmEmail'), ''] }] });
  });

  test('metric filters read the log events the functions emit', () => {
    const filters = Object.fromEntries(
      resourcesOfType('AWS::Logs::MetricFilter').map(([, f]) => [
        f.Properties.MetricTransformations[0].MetricName,
        [f.Properties.LogGroupName, f.Properties.FilterPattern, f.Properties.MetricTransformations[0].MetricNamespace],
      ]),
    );
    expect(filters).toEqual({
      QuarantinedCallbacks: [ref('WorkerLogGroup'), '{ $.event = "callback_quarantined" }', namespace],
      FailedUploads: [ref('WorkerLogGroup'), '{ $.event = "upload_failed" }', namespace],
      RejectedCallbacks: [
        ref('IngestLogGroup'),
        '{ $.event = "callback_request" && ($.status = 401 || $.status = 403) }',
        namespace,
      ],
      SetAsideCallbacks: [ref('IngestLogGroup'), '{ $.event = "callback_request" && $.setAside IS TRUE }', namespace],
      ThrottledRequests: [ref('HttpApiLogGroup'), '{ $.status = 429 }', namespace],
      IngestServerErrors: [ref('HttpApiLogGroup'), '{ $.status >= 500 && $.routeKey != "GET /tasks*" }', namespace],
      ReadApiServerErrors: [ref('HttpApiLogGroup'), '{ $.status >= 500 && $.routeKey = "GET /tasks*" }', namespace],
      FailedEventPublishes: [ref('WorkerLogGroup'), '{ $.event = "events_publish_failed" }', namespace],
      LostFiles: [ref('SweeperLogGroup'), '{ $.event = "sweep_done" && $.lost > 0 }', namespace],
      StalledTasks: [ref('SweeperLogGroup'), '{ $.event = "sweep_done" && $.stalled > 0 }', namespace],
      FilesMissing: [
        ref('VerifierLogGroup'),
        '{ $.event = "file_checked" && ($.state = "missing" || $.state = "empty" || $.state = "size_differs") }',
        namespace,
      ],
      StorageIncidents: [ref('VerifierLogGroup'), '{ $.event = "storage_incident_opened" }', namespace],
      FailedArchiveWrites: [ref('WorkerLogGroup'), '{ $.event = "callback_archive_failed" }', namespace],
    });
    // The event names must exist in the code that logs them, or the alarms would never fire.
    const bundle = (name: string) => readFileSync(join(root, 'dist', name, 'index.mjs'), 'utf8');
    expect(bundle('ingest')).toContain('callback_request');
    expect(bundle('ingest')).toContain('setAside');
    expect(bundle('worker')).toContain('callback_quarantined');
    expect(bundle('worker')).toContain('upload_failed');
    expect(bundle('worker')).toContain('events_publish_failed');
    expect(bundle('worker')).toContain('callback_archive_failed');
    expect(bundle('sweeper')).toContain('sweep_done');
    expect(bundle('verifier')).toContain('file_checked');
    expect(bundle('verifier')).toContain('storage_incident_opened');
  });

  test('every alarm notifies the topic, on alarm and on recovery', () => {
    const alarms = Object.fromEntries(
      resourcesOfType('AWS::CloudWatch::Alarm').map(([id, a]) => {
        const p = a.Properties;
        expect(p.AlarmActions).toEqual([ref('AlarmTopic')]);
        expect(p.OKActions).toEqual([ref('AlarmTopic')]);
        expect(p.TreatMissingData).toBe('notBreaching');
        const dimensions = Object.fromEntries((p.Dimensions ?? []).map((d: Json) => [d.Name, d.Value]));
        return [
          id,
          { metric: `${p.Namespace} ${p.MetricName}`, dimensions, threshold: `${p.ComparisonOperator} ${p.Threshold}` },
        ];
      }),
    );
    expect(alarms).toEqual({
      DeadLetterQueueNotEmptyAlarm: {
        metric: 'AWS/SQS ApproximateNumberOfMessagesVisible',
        dimensions: { QueueName: getAtt('CallbackFifoDeadLetterQueue', 'QueueName') },
        threshold: 'GreaterThanThreshold 0',
      },
      OldestMessageAgeAlarm: {
        metric: 'AWS/SQS ApproximateAgeOfOldestMessage',
        dimensions: { QueueName: getAtt('CallbackFifoQueue', 'QueueName') },
        threshold: 'GreaterThanThreshold 600',
      },
      WorkerErrorsAlarm: {
        metric: 'AWS/Lambda Errors',
        dimensions: { FunctionName: ref('WorkerLambdaFunction') },
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
      SweeperErrorsAlarm: {
        metric: 'AWS/Lambda Errors',
        dimensions: { FunctionName: ref('SweeperLambdaFunction') },
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
      IngestThrottlesAlarm: {
        metric: 'AWS/Lambda Throttles',
        dimensions: { FunctionName: ref('IngestLambdaFunction') },
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
      IngestServerErrorsAlarm: {
        metric: `${namespace} IngestServerErrors`,
        dimensions: {},
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
      ReadApiServerErrorsAlarm: {
        metric: `${namespace} ReadApiServerErrors`,
        dimensions: {},
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
      ApiThrottledRequestsAlarm: {
        metric: `${namespace} ThrottledRequests`,
        dimensions: {},
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
      RejectedCallbacksAlarm: {
        metric: `${namespace} RejectedCallbacks`,
        dimensions: {},
        threshold: 'GreaterThanOrEqualToThreshold 10',
      },
      QuarantinedCallbacksAlarm: {
        metric: `${namespace} QuarantinedCallbacks`,
        dimensions: {},
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
      SetAsideCallbacksAlarm: {
        metric: `${namespace} SetAsideCallbacks`,
        dimensions: {},
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
      FailedUploadsAlarm: {
        metric: `${namespace} FailedUploads`,
        dimensions: {},
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
      FailedEventPublishesAlarm: {
        metric: `${namespace} FailedEventPublishes`,
        dimensions: {},
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
      LostFilesAlarm: {
        metric: `${namespace} LostFiles`,
        dimensions: {},
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
      StalledTasksAlarm: { metric: `${namespace} StalledTasks`, dimensions: {}, threshold: 'GreaterThanThreshold 10' },
      FilesMissingAlarm: {
        metric: `${namespace} FilesMissing`,
        dimensions: {},
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
      StorageIncidentsAlarm: {
        metric: `${namespace} StorageIncidents`,
        dimensions: {},
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
      VerifyDeadLetterQueueNotEmptyAlarm: {
        metric: 'AWS/SQS ApproximateNumberOfMessagesVisible',
        dimensions: { QueueName: getAtt('VerifyDeadLetterQueue', 'QueueName') },
        threshold: 'GreaterThanThreshold 0',
      },
      ArchiveDeliveryFailingAlarm: {
        metric: 'AWS/Firehose DeliveryToS3.Success',
        dimensions: { DeliveryStreamName: ref('ArchiveStream') },
        threshold: 'LessThanThreshold 1',
      },
      ArchiveDeliveryLateAlarm: {
        metric: 'AWS/Firehose DeliveryToS3.DataFreshness',
        dimensions: { DeliveryStreamName: ref('ArchiveStream') },
        threshold: 'GreaterThanThreshold 1200',
      },
      ArchiveWritesFailingAlarm: {
        metric: `${namespace} FailedArchiveWrites`,
        dimensions: {},
        threshold: 'GreaterThanOrEqualToThreshold 1',
      },
    });
  });

  test("ingest-5xx counted the read API's 5xx too: each route family has its own, from the access log", () => {
    const routes = [...API_ROUTE_KEYS, 'POST /callbacks/recording', 'POST /callbacks/screenshot', '$default'];
    const counted = (metric: string) => {
      const filter = resourcesOfType('AWS::Logs::MetricFilter').find(
        ([, f]) => f.Properties.MetricTransformations[0].MetricName === metric,
      )![1].Properties.FilterPattern as string;
      const m = /^\{ \$\.status >= 500 && \$\.routeKey (=|!=) "([^"]+)" \}$/.exec(filter)!;
      return routes.filter((r) => wildcardMatch(m[2]!, r) === (m[1] === '='));
    };
    expect(counted('IngestServerErrors')).toEqual([
      'POST /callbacks/recording',
      'POST /callbacks/screenshot',
      '$default',
    ]);
    expect(counted('ReadApiServerErrors')).toEqual([...API_ROUTE_KEYS]);
    const name = (id: string) => resource(id, 'AWS::CloudWatch::Alarm').Properties.AlarmName;
    expect([name('IngestServerErrorsAlarm'), name('ReadApiServerErrorsAlarm')]).toEqual([
      `${service}-${stage}-ingest-5xx`,
      `${service}-${stage}-read-api-5xx`,
    ]);
  });

  test("the archive's alarms: delivery failing 15 minutes, a line 20 minutes late, 15 minutes of failed writes", () => {
    const p = (id: string) => resource(id, 'AWS::CloudWatch::Alarm').Properties;
    // DeliveryToS3.Success is the share of S3 writes that succeeded in the period: one failure makes it less than 1.
    expect(p('ArchiveDeliveryFailingAlarm')).toMatchObject({ Statistic: 'Minimum', Period: 300, EvaluationPeriods: 3 });
    // DataFreshness is the age (s) of the oldest line not yet in S3: normally under 1.5 times the 300 s buffer.
    const buffer = resource('ArchiveStream', 'AWS::KinesisFirehose::DeliveryStream').Properties
      .ExtendedS3DestinationConfiguration.BufferingHints.IntervalInSeconds;
    expect(p('ArchiveDeliveryLateAlarm')).toMatchObject({ Statistic: 'Maximum', Threshold: 1200 });
    expect(p('ArchiveDeliveryLateAlarm').Threshold).toBeGreaterThan(1.5 * buffer);
    expect(p('ArchiveWritesFailingAlarm')).toMatchObject({ Statistic: 'Sum', Period: 300, EvaluationPeriods: 3 });
    expect(p('ArchiveWritesFailingAlarm').DatapointsToAlarm ?? 3).toBe(3);
  });

  test('rejected callbacks alarm: not on a stray request, but on ten rejections in 15 minutes', () => {
    const p = resource('RejectedCallbacksAlarm', 'AWS::CloudWatch::Alarm').Properties;
    expect(p).toMatchObject({ Statistic: 'Sum', Period: 900, EvaluationPeriods: 1 });
    expect(p.DatapointsToAlarm ?? p.EvaluationPeriods).toBe(1);
    // Whether the alarm state would be ALARM for a period whose Sum is `n`.
    const fires = (n: number) =>
      p.ComparisonOperator === 'GreaterThanOrEqualToThreshold' ? n >= p.Threshold : n > p.Threshold;
    expect([1, 2, 9].map(fires)).toEqual([false, false, false]);
    expect([10, 30].map(fires)).toEqual([true, true]);
  });

  test('outputs: the two callback URLs for the console, and the names operators need', () => {
    const url = (path: string) => ({
      'Fn::Sub': `https://\${HttpApi}.execute-api.\${AWS::Region}.\${AWS::URLSuffix}${path}`,
    });
    expect(template.Outputs.RecordingCallbackUrl!.Value).toEqual(url('/callbacks/recording'));
    expect(template.Outputs.ScreenshotCallbackUrl!.Value).toEqual(url('/callbacks/screenshot'));
    expect(template.Outputs.TasksTableName!.Value).toEqual(ref('TasksTable'));
    expect(template.Outputs.QueueUrl!.Value).toEqual(ref('CallbackFifoQueue'));
    expect(template.Outputs.DeadLetterQueueUrl!.Value).toEqual(ref('CallbackFifoDeadLetterQueue'));
    expect(template.Outputs.AlarmTopicArn!.Value).toEqual(ref('AlarmTopic'));
    expect(template.Outputs.ReadApiInvokePolicyArn!.Value).toEqual(ref('ReadApiInvokePolicy'));
    // The archive's names, for `callbacks archive query` (docs/archive.md).
    expect(template.Outputs.ArchiveBucketName!.Value).toEqual(ref('ArchiveBucket'));
    expect(template.Outputs.ArchiveDatabaseName!.Value).toEqual(ref('ArchiveDatabase'));
    expect(template.Outputs.ArchiveWorkgroupName!.Value).toEqual(ref('ArchiveWorkgroup'));
  });
});

describe('archive', () => {
  const bucketArn = getAtt('ArchiveBucket');
  const under = (prefix: string) => ({ 'Fn::Sub': `\${ArchiveBucket.Arn}/${prefix}*` });
  const stream = () => resource('ArchiveStream', 'AWS::KinesisFirehose::DeliveryStream').Properties;
  const table = () => resource('ArchiveRawTable', 'AWS::Glue::Table').Properties.TableInput;
  /** infra/archive-params.cjs, called as osls calls it, with serverless.yml's defaults and `params` over them. */
  const archiveParams = (params: Record<string, string>) => {
    const resolver = createRequire(import.meta.url)('./archive-params.cjs') as (ctx: {
      resolveVariable: (name: string) => Promise<unknown>;
    }) => Promise<Record<string, unknown>>;
    const values: Record<string, string> = {
      rawRetentionDays: '7',
      archiveRetentionDays: '365',
      archiveQueryLimitGb: '100',
      'self:service': service,
      'sls:stage': stage,
      ...params,
    };
    return resolver({ resolveVariable: async (name) => values[name.replace(/^param:/, '')] });
  };

  test('the bucket: encrypted, no public access, TLS only, kept when the stack is removed', () => {
    const bucket = resource('ArchiveBucket', 'AWS::S3::Bucket');
    expect(bucket.DeletionPolicy).toBe('Retain');
    expect(bucket.UpdateReplacePolicy).toBe('Retain');
    const p = bucket.Properties;
    expect(p.BucketEncryption.ServerSideEncryptionConfiguration).toEqual([
      { ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } },
    ]);
    expect(p.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    const policy = resource('ArchiveBucketPolicy', 'AWS::S3::BucketPolicy').Properties;
    expect(policy.Bucket).toEqual(ref('ArchiveBucket'));
    expect(policy.PolicyDocument.Statement).toEqual([
      {
        Sid: 'DenyUnencryptedTransport',
        Effect: 'Deny',
        Principal: '*',
        Action: 's3:*',
        Resource: [bucketArn, { 'Fn::Sub': '${ArchiveBucket.Arn}/*' }],
        Condition: { Bool: { 'aws:SecureTransport': 'false' } },
      },
    ]);
  });

  test('the lifecycle keeps archived callbacks and delivery errors archiveRetentionDays, results a week', async () => {
    const expiry = (t: Template) =>
      Object.fromEntries(
        (t.Resources.ArchiveBucket!.Properties.LifecycleConfiguration.Rules as Json[]).map((r) => [
          r.Prefix ?? '(all)',
          r.ExpirationInDays ?? `abort uploads after ${r.AbortIncompleteMultipartUpload?.DaysAfterInitiation} day`,
        ]),
      );
    expect(expiry(template)).toEqual({
      'raw/': 365,
      'errors/': 365,
      'athena-results/': 7,
      '(all)': 'abort uploads after 1 day',
    });
    // VARIANT_PARAMS.archive
    const custom = await variant;
    expect(expiry(custom)['raw/']).toBe(30);
    expect(custom.Parameters.RawRetentionDays.Default).toBe('3');
    expect(custom.Resources.ArchiveRawTable!.Properties.TableInput.Parameters['projection.dt.range']).toBe(
      'NOW-30DAYS,NOW',
    );
    expect(custom.Resources.ArchiveWorkgroup!.Properties.WorkGroupConfiguration.BytesScannedCutoffPerQuery).toBe(
      0.5 * 1024 ** 3,
    );
  });

  test("the retentions are checked when packaging: whole days, the archive's no shorter than the table's", async () => {
    expect(await archiveParams({})).toEqual({
      rawRetentionDays: '7',
      archiveRetentionDays: 365,
      archiveQueryLimitBytes: 100 * 1024 ** 3,
      databaseName: `rtc_callbacks_receiver_${stage}_archive`,
    });
    const refused: [Record<string, string>, string][] = [
      [
        { rawRetentionDays: '0' },
        'Stage parameter rawRetentionDays must be a whole number of days, at least 1, not "0".',
      ],
      [{ archiveRetentionDays: '1.5' }, 'Stage parameter archiveRetentionDays must be a whole number of days'],
      [
        { rawRetentionDays: '30', archiveRetentionDays: '7' },
        'Stage parameter archiveRetentionDays (7) must be at least rawRetentionDays (30): a raw callback that has ' +
          'left the table must still be in the archive.',
      ],
      [{ archiveQueryLimitGb: '0.001' }, "Athena's least limit is 10 MB"],
      [{ archiveQueryLimitGb: 'lots' }, 'Stage parameter archiveQueryLimitGb must be a number of GB'],
    ];
    for (const [params, sentence] of refused) await expect(archiveParams(params)).rejects.toThrow(sentence);
    // A stage name Glue would not take as it is.
    expect((await archiveParams({ 'sls:stage': 'Prod-EU.2' })).databaseName).toBe(
      'rtc_callbacks_receiver_prod_eu_2_archive',
    );
  });

  test('the stream: Direct PUT, encrypted, GZIP, its own role, its delivery errors logged and kept apart', () => {
    const p = stream();
    expect(p.DeliveryStreamName).toBe(`${service}-${stage}-archive`);
    expect(p.DeliveryStreamType).toBe('DirectPut');
    expect(p.DeliveryStreamEncryptionConfigurationInput).toEqual({ KeyType: 'AWS_OWNED_CMK' });
    const s3 = p.ExtendedS3DestinationConfiguration;
    expect(s3.BucketARN).toEqual(bucketArn);
    expect(s3.RoleARN).toEqual(getAtt('ArchiveDeliveryRole'));
    expect(s3.CompressionFormat).toBe('GZIP');
    // Dynamic partitioning needs an error prefix; each kind of error in a folder of its own.
    expect(s3.ErrorOutputPrefix).toMatch(/^errors\/!\{firehose:error-output-type\}\//);
    expect(s3.DynamicPartitioningConfiguration.Enabled).toBe(true);
    // Firehose's limits with dynamic partitioning: a buffer of at least 64 MB, at most 900 s.
    expect(s3.BufferingHints.SizeInMBs).toBeGreaterThanOrEqual(64);
    expect(s3.BufferingHints.IntervalInSeconds).toBeLessThanOrEqual(900);
    expect(s3.CloudWatchLoggingOptions).toEqual({
      Enabled: true,
      LogGroupName: ref('ArchiveDeliveryLogGroup'),
      LogStreamName: ref('ArchiveDeliveryLogStream'),
    });
    const group = resource('ArchiveDeliveryLogGroup', 'AWS::Logs::LogGroup').Properties;
    expect(group.LogGroupName).toBe(`/aws/kinesisfirehose/${service}-${stage}-archive`);
    expect(resource('ArchiveDeliveryLogStream', 'AWS::Logs::LogStream').Properties.LogGroupName).toEqual(
      ref('ArchiveDeliveryLogGroup'),
    );
  });

  test('the stream files each line under the folder of its `partition`, as lib/domain/archive.ts writes it', () => {
    const s3 = stream().ExtendedS3DestinationConfiguration;
    const processors = s3.ProcessingConfiguration.Processors as Json[];
    expect(processors.map((p) => p.Type)).toEqual(['MetadataExtraction']);
    const parameters = Object.fromEntries(
      (processors[0].Parameters as Json[]).map((p) => [p.ParameterName, p.ParameterValue]),
    );
    expect(parameters.JsonParsingEngine).toBe('JQ-1.6');
    // `{key: .partition.key, ...}`: each partition key read off the line's object of the same name.
    const query = /^\{(.*)\}$/.exec(parameters.MetadataExtractionQuery)![1]!;
    const keys = query.split(',').map((pair: string) => {
      const [key, path] = pair.split(':').map((x) => x.trim()) as [string, string];
      expect(path).toBe(`.partition.${key}`);
      return key;
    });
    const line = { partition: partitionOf('recording', 'app-1', Date.UTC(2025, 10, 22, 2, 30)) };
    expect(keys.sort()).toEqual(Object.keys(line.partition).sort());
    // The prefix Firehose builds for that line, as the table's partitions and the local stand-in read it.
    const prefix = (s3.Prefix as string).replace(
      /!\{partitionKeyFromQuery:(\w+)\}/g,
      (_, key: string) => (line.partition as unknown as Record<string, string>)[key]!,
    );
    expect(prefix).toBe('raw/service=recording/dt=2025-11-22/appKey=app-1/');
    expect(prefix).not.toContain('!{');
  });

  test("the stream's role: s3:PutObject under the archive's prefixes, its error log; Firehose of this account", () => {
    const role = resource('ArchiveDeliveryRole', 'AWS::IAM::Role').Properties;
    expect(role.AssumeRolePolicyDocument.Statement).toEqual([
      {
        Effect: 'Allow',
        Principal: { Service: 'firehose.amazonaws.com' },
        Action: 'sts:AssumeRole',
        Condition: { StringEquals: { 'sts:ExternalId': ref('AWS::AccountId') } },
      },
    ]);
    expect(statementsOf('ArchiveDeliveryRole').map((st) => [actions(st), st.Resource])).toEqual([
      [['s3:PutObject'], [under('raw/'), under('errors/')]],
      [
        ['logs:PutLogEvents'],
        {
          'Fn::Sub':
            'arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:${ArchiveDeliveryLogGroup}' +
            ':log-stream:${ArchiveDeliveryLogStream}',
        },
      ],
    ]);
    // Every prefix the stream writes is one the role may write.
    const s3 = stream().ExtendedS3DestinationConfiguration;
    for (const prefix of [s3.Prefix, s3.ErrorOutputPrefix]) expect(prefix).toMatch(/^(raw|errors)\//);
  });

  test('the worker archives to that stream, and may PutRecordBatch on it alone', () => {
    const fn = resource('WorkerLambdaFunction', 'AWS::Lambda::Function').Properties;
    expect(fn.Environment.Variables.ARCHIVE_STREAM).toEqual(ref('ArchiveStream'));
    const firehose = statementsOf('WorkerRole').filter((st) => actions(st).some((a) => a.startsWith('firehose:')));
    expect(firehose).toEqual([
      {
        Sid: 'ArchiveCallbacks',
        Effect: 'Allow',
        Action: 'firehose:PutRecordBatch',
        Resource: getAtt('ArchiveStream'),
      },
    ]);
    // No other role may write the archive.
    for (const id of roleIds.filter((r) => r !== 'WorkerRole'))
      expect(
        statementsOf(id)
          .flatMap(actions)
          .filter((a) => a.startsWith('firehose:')),
      ).toEqual([]);
  });

  test('the Glue table raw: JSON SerDe, the columns of lib/domain/archive.ts, service and dt projected', () => {
    const db = resource('ArchiveDatabase', 'AWS::Glue::Database').Properties;
    expect(db.DatabaseInput.Name).toBe(`rtc_callbacks_receiver_${stage}_archive`);
    const t = table();
    expect(resource('ArchiveRawTable', 'AWS::Glue::Table').Properties.DatabaseName).toEqual(ref('ArchiveDatabase'));
    expect(t.Name).toBe('raw');
    expect(t.TableType).toBe('EXTERNAL_TABLE');
    const sd = t.StorageDescriptor;
    expect(sd.SerdeInfo.SerializationLibrary).toBe('org.openx.data.jsonserde.JsonSerDe');
    expect(sd.Location).toEqual({ 'Fn::Sub': 's3://${ArchiveBucket}/raw/' });
    expect(sd.Columns.map((c: Json) => [c.Name, c.Type])).toEqual(ARCHIVE_COLUMNS.map(([n, type]) => [n, type]));
    expect(t.PartitionKeys).toEqual([
      { Name: 'service', Type: 'string' },
      { Name: 'dt', Type: 'string' },
    ]);
    const p = t.Parameters;
    expect(p['projection.enabled']).toBe('true');
    expect(p['projection.service.type']).toBe('enum');
    expect(p['projection.service.values'].split(',')).toEqual([...SERVICES]);
    expect(p).toMatchObject({
      'projection.dt.type': 'date',
      'projection.dt.format': 'yyyy-MM-dd',
      'projection.dt.range': 'NOW-365DAYS,NOW',
      'projection.dt.interval': '1',
      'projection.dt.interval.unit': 'DAYS',
    });
    // Every partition key projected (Athena refuses a projected table with one that is not), none injected: no
    // query has to name a value of one. The template reads each day's folder, the appKey folders under it included.
    expect(
      Object.keys(p)
        .filter((k) => /^projection\.\w+\.type$/.test(k))
        .sort(),
    ).toEqual(['projection.dt.type', 'projection.service.type']);
    expect(p['storage.location.template']).toEqual({
      'Fn::Sub': 's3://${ArchiveBucket}/raw/service=${!service}/dt=${!dt}/',
    });
    // The folders the stream writes are under those the template names.
    expect(stream().ExtendedS3DestinationConfiguration.Prefix).toMatch(
      /^raw\/service=!\{partitionKeyFromQuery:service\}\/dt=!\{partitionKeyFromQuery:dt\}\//,
    );
    expect(resourcesOfType('AWS::Glue::Crawler')).toEqual([]);
  });

  test("the table's columns are those docs/archive.md lists, with their types", () => {
    const docs = readFileSync(join(root, 'docs/archive.md'), 'utf8');
    const section = docs.slice(docs.indexOf('## The table `raw`'));
    const rows = [...section.matchAll(/^\| `(\w+)`\s*\| (\w+)\s*\|/gm)].map((m) => [m[1], m[2]]);
    const types: Record<string, string> = { string: 'string', int: 'int', boolean: 'boolean' };
    expect(rows).toEqual([
      ...table().StorageDescriptor.Columns.map((c: Json) => [c.Name, types[c.Type]]),
      ...table().PartitionKeys.map((c: Json) => [c.Name, c.Type]),
    ]);
  });

  test('the workgroup: its limit per query and its results location enforced, engine 3, metrics', () => {
    const wg = resource('ArchiveWorkgroup', 'AWS::Athena::WorkGroup').Properties;
    expect(wg.Name).toBe(`${service}-${stage}-archive`);
    const config = wg.WorkGroupConfiguration;
    expect(config.EnforceWorkGroupConfiguration).toBe(true);
    expect(config.BytesScannedCutoffPerQuery).toBe(100 * 1024 ** 3);
    expect(config.PublishCloudWatchMetricsEnabled).toBe(true);
    expect(config.EngineVersion).toEqual({ SelectedEngineVersion: 'Athena engine version 3' });
    expect(config.ResultConfiguration).toEqual({
      OutputLocation: { 'Fn::Sub': 's3://${ArchiveBucket}/athena-results/' },
      EncryptionConfiguration: { EncryptionOption: 'SSE_S3' },
    });
  });
});

/** The entries of a zip archive (stored or deflated), read from its central directory. */
function readZip(zip: Buffer): Map<string, Buffer> {
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  expect(end).toBeGreaterThanOrEqual(0);
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  const entries = new Map<string, Buffer>();
  for (let i = 0; i < count; i++) {
    expect(zip.readUInt32LE(at)).toBe(0x02014b50);
    const method = zip.readUInt16LE(at + 10);
    const compressedSize = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const localOffset = zip.readUInt32LE(at + 42);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    const dataStart = localOffset + 30 + zip.readUInt16LE(localOffset + 26) + zip.readUInt16LE(localOffset + 28);
    const data = zip.subarray(dataStart, dataStart + compressedSize);
    entries.set(name, method === 8 ? inflateRawSync(data) : Buffer.from(data));
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}
