// The resources the template declares, created in the local emulators when the stack starts (and brought up
// to date when they are kept from an earlier run): the table in dynalite, the queues, the topics and their
// SQS subscriptions in fauxqs.
import { type CreateTableCommandInput, DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, type SQSClient, SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { CreateTopicCommand, type SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import type { Logger } from '../../lib/log.ts';
import { createActiveTable } from './dynamo.ts';
import type { QueueSettings, StackSettings } from './stack-template.ts';

export async function ensureTable(dynamo: DynamoDBClient, definition: CreateTableCommandInput): Promise<void> {
  const tableName = definition.TableName!;
  try {
    await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (err) {
    if ((err as Error).name !== 'ResourceNotFoundException') throw err;
  }
  await createActiveTable(dynamo, definition);
}

/**
 * The queues as the template declares them (FIFO ones as FIFO), dead-letter queues first. Settings are applied
 * on every start, so queues kept from an earlier run get the current ones. Queue URLs are built on the emulator's
 * address: fauxqs names queues `sqs.<region>.localhost`, which does not resolve everywhere, and the SDK sends
 * each call to the host of its QueueUrl.
 */
export async function ensureQueues(sqs: SQSClient, queues: readonly QueueSettings[]): Promise<void> {
  for (const queue of queues) {
    // FIFO is fixed when a queue is created; the other settings can change later.
    await sqs.send(new CreateQueueCommand({ QueueName: queue.name, Attributes: queue.createAttributes }));
    if (Object.keys(queue.attributes).length > 0)
      await sqs.send(new SetQueueAttributesCommand({ QueueUrl: queue.url, Attributes: queue.attributes }));
  }
}

/** The topics and their SQS subscriptions (with their filter policies); other protocols cannot run here. */
export async function ensureTopics(sns: SNSClient, settings: StackSettings, log: Logger): Promise<void> {
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
