// Where a CLI command that applies callbacks (`quarantine apply`) publishes their task events, as the worker
// does, and the topic `events tail --follow` subscribes to: the local stack's topic, the one named by
// --events-topic or TASK_EVENTS_TOPIC_ARN, or a stage's own topic (its ARN built from the caller's account,
// which STS tells without any permission).
import { SNSClient } from '@aws-sdk/client-sns';
import { snsEventPublisher } from '../lib/aws/sns/task-events.ts';
import type { EventPublisher } from '../lib/domain/event-publisher.ts';
import { LOCAL_CREDENTIALS, SERVICE, resourceNames } from '../devkit/local/deployed-settings.ts';
import { errorSentence } from '../lib/text.ts';
import { enforceIam } from '../devkit/local/iam/enforce.ts';
import { OPERATOR } from '../devkit/local/iam/operator-policy.ts';
import { localOperatorSession, TargetError, type Target } from '../devkit/local/target.ts';
import { awsClientSettings } from '../lib/aws/env-client-settings.ts';
import { cliIo } from './io.ts';

export interface TaskEventsTarget {
  /** The topic, for messages; null when none is known (no events are published). */
  topicArn: string | null;
  publisher: EventPublisher | undefined;
  close(): void;
}

async function stageTopicArn(
  stage: string,
  region: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<string> {
  const { STSClient, GetCallerIdentityCommand } = await import('@aws-sdk/client-sts');
  const sts = new STSClient({ ...awsClientSettings('STS', env), region, maxAttempts: 3 });
  try {
    const { Arn, Account } = await sts.send(new GetCallerIdentityCommand({}));
    const partition = Arn?.split(':')[1] ?? 'aws';
    const topic = resourceNames(stage, env.CALLBACKS_SERVICE_NAME ?? SERVICE).eventsTopic;
    return `arn:${partition}:sns:${region}:${Account}:${topic}`;
  } catch (err) {
    throw new TargetError(
      `cannot tell the task-events topic of stage ${stage}: ${errorSentence(err)}; pass --events-topic <arn>`,
    );
  } finally {
    sts.destroy();
  }
}

export interface TaskEventsTopic {
  /** Null when none is known. */
  topicArn: string | null;
  /** A client of the topic's SNS (the local stack's on its SQS port); undefined without a topic. */
  sns: SNSClient | undefined;
}

export async function taskEventsTopicFor(
  target: Target,
  opts: { eventsTopic?: string },
  env: Readonly<Record<string, string | undefined>> = cliIo().env,
): Promise<TaskEventsTopic> {
  const named = opts.eventsTopic ?? (env.TASK_EVENTS_TOPIC_ARN?.trim() || undefined);
  let topicArn: string | null = null;
  let client: SNSClient | undefined;
  if (target.kind === 'local' && !named) {
    topicArn = target.local?.eventsTopicArn ?? null;
    if (topicArn) {
      // fauxqs serves SNS on the SQS port.
      client = new SNSClient({
        endpoint: target.local!.sqsEndpoint,
        region: target.region,
        credentials: LOCAL_CREDENTIALS,
        maxAttempts: 2,
      });
      enforceIam(client, OPERATOR, localOperatorSession(target.local!, target.eventsQueueUrl));
    }
  } else {
    topicArn = named ?? (target.stage ? await stageTopicArn(target.stage, target.region, env) : null);
    if (topicArn) client = new SNSClient({ ...awsClientSettings('SNS', env), region: target.region, maxAttempts: 3 });
  }
  return { topicArn, sns: client };
}

export async function taskEventsFor(
  target: Target,
  opts: { eventsTopic?: string },
  env: Readonly<Record<string, string | undefined>> = cliIo().env,
): Promise<TaskEventsTarget> {
  const { topicArn, sns: client } = await taskEventsTopicFor(target, opts, env);
  return {
    topicArn,
    publisher: client && topicArn ? snsEventPublisher(client, topicArn) : undefined,
    close: () => client?.destroy(),
  };
}
