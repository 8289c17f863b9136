// Which store and queues a command, the bench or the soak talks to: the local stack that `callbacks dev` runs
// in this folder (it leaves `.data/stack.json`), a deployed stage (`--stage`/`--region`), or explicit env variables.
// Opening a target contacts nothing: a command that only reads tasks needs only read access to the table,
// and the queue URLs of a stage are looked up only by the commands that use a queue.
import { resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoTaskStore } from '../../lib/aws/dynamo/read/task-store.ts';
import { LOCAL_ACCOUNT_ID, LOCAL_CREDENTIALS, LOCAL_STAGE, SERVICE, resourceNames } from './deployed-settings.ts';
import { enforceIam, type IamSession } from './iam/enforce.ts';
import { OPERATOR, operatorSession } from './iam/operator-policy.ts';
import { withoutSdkLogging } from '../../lib/aws/clients.ts';
import { type LocalStackInfo, readLocalStack } from './stack-file.ts';
import { errorSentence } from '../../lib/text.ts';
import { awsClientSettings } from '../../lib/aws/env-client-settings.ts';

export interface QueueDepth {
  visible: number;
  inFlight: number;
  delayed: number;
}

export interface Target {
  /** One sentence naming what is targeted, for messages. */
  describe: string;
  kind: 'local' | 'aws';
  /** The local stack's file, when the target is the local stack. */
  local: LocalStackInfo | null;
  /** The deployed stage named by --stage, if any. */
  stage: string | null;
  tableName: string;
  region: string;
  /** The main and dead-letter queue URLs (a stage's are looked up at the first call, once). */
  queues(): Promise<{ queueUrl: string | null; dlqUrl: string | null }>;
  /** A queue subscribed to the task-events topic: the local stack's, or the one named for a deployed stage. */
  eventsQueueUrl: string | null;
  dynamo: DynamoDBClient;
  sqs: SQSClient;
  tasks: DynamoTaskStore;
  queue: { depth(): Promise<QueueDepth> };
  dlq: { depth(): Promise<QueueDepth> };
  close(): Promise<void>;
}

export interface TargetOptions {
  stage?: string;
  region?: string;
  /** Folder whose `.data/stack.json` names the local stack (default: the current folder). */
  cwd?: string;
  /** A queue subscribed to the task-events topic (deployed: the team's own; default env TASK_EVENTS_QUEUE_URL). */
  eventsQueueUrl?: string;
  env?: Readonly<Record<string, string | undefined>>;
}

export class TargetError extends Error {
  override name = 'TargetError';
}

export async function openTarget(opts: TargetOptions = {}): Promise<Target> {
  const env = opts.env ?? process.env;
  const eventsQueueUrl = opts.eventsQueueUrl ?? (env.TASK_EVENTS_QUEUE_URL || null);
  if (opts.stage) {
    const region = opts.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
    return openDeployed(opts.stage, region, env, eventsQueueUrl);
  }
  if (env.TASKS_TABLE) {
    const region = opts.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
    return openAws({
      stage: null,
      eventsQueueUrl,
      tableName: env.TASKS_TABLE,
      region,
      queues: async () => ({ queueUrl: env.QUEUE_URL ?? null, dlqUrl: env.DLQ_URL ?? null }),
      describe: region ? `table ${env.TASKS_TABLE} in ${region}` : `table ${env.TASKS_TABLE}`,
      env,
    });
  }
  const cwd = opts.cwd ?? process.cwd();
  const local = readLocalStack(cwd);
  if (!local) {
    throw new TargetError(
      `no local stack is running in ${resolve(cwd)} (start one with "npm start"), and neither --stage ` +
        `nor TASKS_TABLE names a deployed one`,
    );
  }
  return openLocal(local, eventsQueueUrl);
}

/**
 * The operators' policy (docs/cli-operations.md) for the commands run against a local stack: their calls
 * are held to it there, as they would be on a stage.
 */
export function localOperatorSession(local: LocalStackInfo, eventsQueueUrl: string | null): IamSession {
  return operatorSession({
    region: local.region,
    account: LOCAL_ACCOUNT_ID,
    stage: LOCAL_STAGE,
    eventsQueue: eventsQueueUrl ? (new URL(eventsQueueUrl).pathname.split('/').pop() ?? '') : '',
  });
}

export function openLocal(local: LocalStackInfo, eventsQueueUrl: string | null = null): Target {
  const eventsQueue = eventsQueueUrl ?? local.eventsQueueUrl ?? null;
  const operator = localOperatorSession(local, eventsQueue);
  const settings = { region: local.region, credentials: LOCAL_CREDENTIALS, maxAttempts: 2 };
  const dynamo = withoutSdkLogging(new DynamoDBClient({ endpoint: local.dynamoEndpoint, ...settings }));
  const sqs = withoutSdkLogging(new SQSClient({ endpoint: local.sqsEndpoint, ...settings }));
  return assemble({
    kind: 'local',
    local,
    stage: null,
    describe: `the local stack at ${local.url} (table ${local.tableName})`,
    tableName: local.tableName,
    region: local.region,
    queues: async () => ({ queueUrl: local.queueUrl, dlqUrl: local.dlqUrl }),
    eventsQueueUrl: eventsQueue,
    dynamo: enforced(dynamo),
    sqs: enforced(sqs),
  });
  function enforced<T extends object>(client: T): T {
    enforceIam(client, OPERATOR, operator);
    return client;
  }
}

async function openDeployed(
  stage: string,
  region: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  eventsQueueUrl: string | null,
): Promise<Target> {
  const names = resourceNames(stage, env.CALLBACKS_SERVICE_NAME ?? SERVICE);
  const tableName = names.table;
  if (!region) throw new TargetError(`stage ${stage} needs a region: pass --region or set AWS_REGION`);
  const describe = `stage ${stage} in ${region} (table ${tableName})`;
  const lookUp = async (sqs: SQSClient) => {
    const urlOf = async (name: string) => {
      try {
        return (await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl ?? null;
      } catch (err) {
        throw new TargetError(`${describe}: looking up queue ${name} failed: ${errorSentence(err)}`);
      }
    };
    return {
      queueUrl: await urlOf(names.queue),
      dlqUrl: await urlOf(names.deadLetterQueue),
    };
  };
  return openAws({ stage, tableName, region, queues: lookUp, eventsQueueUrl, describe, env });
}

async function openAws(o: {
  stage: string | null;
  tableName: string;
  region: string | undefined;
  queues: (sqs: SQSClient) => Promise<{ queueUrl: string | null; dlqUrl: string | null }>;
  eventsQueueUrl: string | null;
  describe: string;
  /** Where the clients' region, endpoint and keys come from (lib/aws/env-client-settings.ts). */
  env: Readonly<Record<string, string | undefined>>;
}): Promise<Target> {
  if (!o.region) throw new TargetError(`${o.describe}: no region; pass --region or set AWS_REGION`);
  const dynamo = new DynamoDBClient({
    ...awsClientSettings('DYNAMODB', o.env),
    region: o.region,
    maxAttempts: 3,
  });
  const sqs = new SQSClient({ ...awsClientSettings('SQS', o.env), region: o.region, maxAttempts: 3 });
  return assemble({
    kind: 'aws',
    local: null,
    stage: o.stage,
    describe: o.describe,
    tableName: o.tableName,
    region: o.region,
    queues: () => o.queues(sqs),
    eventsQueueUrl: o.eventsQueueUrl,
    dynamo,
    sqs,
  });
}

function assemble(t: Omit<Target, 'tasks' | 'queue' | 'dlq' | 'close'>): Target {
  let known: ReturnType<Target['queues']> | undefined;
  const queues = () => {
    known ??= t.queues();
    // A failed look-up is not remembered: the next call tries again.
    known.catch(() => {
      known = undefined;
    });
    return known;
  };
  const depthOf = (which: 'queueUrl' | 'dlqUrl', name: string) => async (): Promise<QueueDepth> => {
    const url = (await queues())[which];
    if (!url)
      throw new TargetError(
        `${t.describe}: no ${name} URL is known (set ${name === 'queue' ? 'QUEUE_URL' : 'DLQ_URL'})`,
      );
    const res = await t.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    const a = res.Attributes ?? {};
    return {
      visible: Number(a.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
      delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
    };
  };
  return {
    ...t,
    queues,
    tasks: new DynamoTaskStore({ client: t.dynamo, tableName: t.tableName, verifications: true }),
    queue: { depth: depthOf('queueUrl', 'queue') },
    dlq: { depth: depthOf('dlqUrl', 'dead-letter queue') },
    async close() {
      t.dynamo.destroy();
      t.sqs.destroy();
    },
  };
}
