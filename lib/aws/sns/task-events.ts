// Publishes task events (lib/domain/task-events.ts) to the stack's SNS topic. A publish either succeeds
// for every event or throws: the worker then fails the record, and its redelivery publishes again.
import { PublishBatchCommand, SNSClient, type MessageAttributeValue, type SNSClientConfig } from '@aws-sdk/client-sns';
import { MANY_CALLS, functionClient } from '../clients.ts';
import type { EventPublisher } from '../../domain/event-publisher.ts';
import type { TaskEvent } from '../../domain/task-events.ts';
import { chunks } from '../../in-parallel.ts';

/** SNS takes at most ten messages per PublishBatch call. */
const BATCH = 10;

/** The message attributes subscribers' filter policies can match on. */
const EVENT_ATTRIBUTES = ['service', 'type', 'appKey', 'status'] as const;

class PublishError extends Error {
  override name = 'PublishError';
}

function messageAttributes(e: TaskEvent): Record<string, MessageAttributeValue> {
  const values: Record<(typeof EVENT_ATTRIBUTES)[number], string> = {
    service: e.task.service,
    type: e.type,
    appKey: e.task.appKey,
    status: e.task.status,
  };
  return Object.fromEntries(
    EVENT_ATTRIBUTES.map((name) => [name, { DataType: 'String', StringValue: values[name] }]),
  ) as Record<string, MessageAttributeValue>;
}

export function snsEventPublisher(client: SNSClient, topicArn: string): EventPublisher & { published(): number } {
  let published = 0;
  return {
    published: () => published,
    async publish(events) {
      for (const chunk of chunks(events, BATCH)) {
        const res = await client.send(
          new PublishBatchCommand({
            TopicArn: topicArn,
            PublishBatchRequestEntries: chunk.map((e, j) => ({
              Id: String(j),
              Message: JSON.stringify(e),
              MessageAttributes: messageAttributes(e),
            })),
          }),
        );
        const failed = res.Failed ?? [];
        published += chunk.length - failed.length;
        if (failed.length > 0) {
          const first = failed[0]!;
          throw new PublishError(
            `${failed.length} of ${chunk.length} events were refused (${first.Code ?? 'error'}: ` +
              `${first.Message ?? ''})`,
          );
        }
      }
    },
  };
}

/** The publisher to a topic; none (events off) when no topic is named. */
export function eventPublisherTo(
  topicArn: string,
  config: Pick<SNSClientConfig, 'requestHandler' | 'region' | 'endpoint' | 'credentials'> = {},
): ReturnType<typeof snsEventPublisher> | undefined {
  if (!topicArn) return undefined;
  return snsEventPublisher(functionClient(new SNSClient({ ...config, ...MANY_CALLS, maxAttempts: 3 })), topicArn);
}
