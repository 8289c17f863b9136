// Which store and queues a CLI command talks to: the local stack that `callbacks dev` runs in this folder
// (it leaves `.data/stack.json`), a deployed stage (`--stage`/`--region`), or explicit env variables.
import { resolve } from 'node:path';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoTaskStore } from '../lib/aws/dynamo/task-store.ts';
import { type LocalStackInfo, readLocalStack } from '../lib/local/stack-file.ts';
import { LOCAL_CREDENTIALS, SERVICE, resourceNames } from '../lib/local/deployed-settings.ts';
import { errorSentence } from '../lib/text.ts';

export interface QueueDepth {
  visible: number;
  inFlight: number;
  delayed: number;
}

export interface Target {
  /** One sentence naming what is targeted, for messages. */
  describe: string;
  kind: 'local' | 'aws';
  tableName: string;
  region: string;
  queueUrl: string | null;
  dlqUrl: string | null;
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
  env?: NodeJS.ProcessEnv;
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
    return openAws({
      eventsQueueUrl,
      tableName: env.TASKS_TABLE,
      region: opts.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION,
      queueUrl: env.QUEUE_URL ?? null,
      dlqUrl: env.DLQ_URL ?? null,
      describe: `table ${env.TASKS_TABLE}`,
    });
  }
  const local = readLocalStack(opts.cwd);
  if (!local) {
    throw new TargetError(
      `no local stack is running in ${resolve(opts.cwd ?? '.')} (start one with "npm start"), and neither --stage nor TASKS_TABLE names a deployed one`,
    );
  }
  return openLocal(local, eventsQueueUrl);
}

export function openLocal(local: LocalStackInfo, eventsQueueUrl: string | null = null): Target {
  const dynamo = new DynamoDBClient({
    endpoint: local.dynamoEndpoint,
    region: local.region,
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 2,
  });
  const sqs = new SQSClient({
    endpoint: local.sqsEndpoint,
    region: local.region,
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 2,
  });
  return assemble({
    kind: 'local',
    describe: `the local stack at ${local.url} (table ${local.tableName})`,
    tableName: local.tableName,
    region: local.region,
    queueUrl: local.queueUrl,
    dlqUrl: local.dlqUrl,
    eventsQueueUrl: eventsQueueUrl ?? local.eventsQueueUrl ?? null,
    dynamo,
    sqs,
  });
}

async function openDeployed(
  stage: string,
  region: string | undefined,
  env: NodeJS.ProcessEnv,
  eventsQueueUrl: string | null,
): Promise<Target> {
  const names = resourceNames(stage, env.CALLBACKS_SERVICE_NAME ?? SERVICE);
  const tableName = names.table;
  if (!region) throw new TargetError(`stage ${stage} needs a region: pass --region or set AWS_REGION`);
  const sqs = new SQSClient({ region, maxAttempts: 3 });
  const urlOf = async (name: string) => {
    try {
      return (await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl ?? null;
    } catch (err) {
      throw new TargetError(
        `cannot open stage ${stage} in ${region} (table ${tableName}): looking up queue ${name} failed: ${errorSentence(err)}`,
      );
    }
  };
  const queueUrl = await urlOf(names.queue);
  const dlqUrl = await urlOf(names.deadLetterQueue);
  sqs.destroy();
  const describe = `stage ${stage} in ${region} (table ${tableName})`;
  return openAws({ tableName, region, queueUrl, dlqUrl, eventsQueueUrl, describe });
}

async function openAws(o: {
  tableName: string;
  region: string | undefined;
  queueUrl: string | null;
  dlqUrl: string | null;
  eventsQueueUrl: string | null;
  describe: string;
}): Promise<Target> {
  if (!o.region) throw new TargetError(`${o.describe}: no region; pass --region or set AWS_REGION`);
  const dynamo = new DynamoDBClient({ region: o.region, maxAttempts: 3 });
  const sqs = new SQSClient({ region: o.region, maxAttempts: 3 });
  try {
    await dynamo.send(new DescribeTableCommand({ TableName: o.tableName }));
  } catch (err) {
    dynamo.destroy();
    sqs.destroy();
    throw new TargetError(`cannot reach table ${o.tableName} in ${o.region}: ${errorSentence(err)}`);
  }
  return assemble({
    kind: 'aws',
    describe: o.describe,
    tableName: o.tableName,
    region: o.region,
    queueUrl: o.queueUrl,
    dlqUrl: o.dlqUrl,
    eventsQueueUrl: o.eventsQueueUrl,
    dynamo,
    sqs,
  });
}

function assemble(t: Omit<Target, 'tasks' | 'queue' | 'dlq' | 'close'>): Target {
  const depthOf = (url: string | null, name: string) => async (): Promise<QueueDepth> => {
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
    tasks: new DynamoTaskStore({ client: t.dynamo, tableName: t.tableName }),
    queue: { depth: depthOf(t.queueUrl, 'queue') },
    dlq: { depth: depthOf(t.dlqUrl, 'dead-letter queue') },
    async close() {
      t.dynamo.destroy();
      t.sqs.destroy();
    },
  };
}
