// Publishes task events (lib/domain/task-events.ts) to the stack's SNS topic. A publish either succeeds
// for every event or throws: the worker then fails the record, and its redelivery publishes again.
import { PublishBatchCommand, SNSClient, type MessageAttributeValue, type SNSClientConfig } from '@aws-sdk/client-sns';
import { MANY_CALLS, functionClient } from '../clients.ts';
import type { EventPublisher, StoragePublisher } from '../../domain/event-publisher.ts';
import type { StorageEvent } from '../../domain/storage-incidents.ts';
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

/** Publishes messages ten to a PublishBatch, counting those published; throws when any was refused. */
async function publishMessages<E>(
  client: SNSClient,
  topicArn: string,
  events: readonly E[],
  attributes: (e: E) => Record<string, MessageAttributeValue>,
  count: (published: number) => void = () => {},
): Promise<void> {
  for (const chunk of chunks(events, BATCH)) {
    const res = await client.send(
      new PublishBatchCommand({
        TopicArn: topicArn,
        PublishBatchRequestEntries: chunk.map((e, j) => ({
          Id: String(j),
          Message: JSON.stringify(e),
          MessageAttributes: attributes(e),
        })),
      }),
    );
    const failed = res.Failed ?? [];
    count(chunk.length - failed.length);
    if (failed.length > 0) {
      const first = failed[0]!;
      throw new PublishError(
        `${failed.length} of ${chunk.length} events were refused (${first.Code ?? 'error'}: ${first.Message ?? ''})`,
      );
    }
  }
}

export function snsEventPublisher(client: SNSClient, topicArn: string): EventPublisher & { published(): number } {
  let published = 0;
  return {
    published: () => published,
    publish: (events) => publishMessages(client, topicArn, events, messageAttributes, (n) => (published += n)),
  };
}

/**
 * Publishes storage events (lib/domain/storage-incidents.ts) to the same topic, with the attributes `type`, `appKey`
 * and `storage` for subscribers' filter policies.
 */
export function snsStoragePublisher(client: SNSClient, topicArn: string): StoragePublisher {
  const attributes = (e: StorageEvent): Record<string, MessageAttributeValue> => ({
    type: { DataType: 'String', StringValue: e.type },
    appKey: { DataType: 'String', StringValue: e.incident.appKey },
    storage: { DataType: 'String', StringValue: e.incident.storage },
  });
  return { publish: (events) => publishMessages(client, topicArn, events, attributes) };
}

/** The SNS client of a function that publishes to the topic (the worker's clients settings: many calls). */
export function topicClient(
  config: Pick<SNSClientConfig, 'requestHandler' | 'region' | 'endpoint' | 'credentials'> = {},
): SNSClient {
  return functionClient(new SNSClient({ ...config, ...MANY_CALLS, maxAttempts: 3 }));
}

/** The publisher to a topic; none (events off) when no topic is named. */
export function eventPublisherTo(
  topicArn: string,
  config: Pick<SNSClientConfig, 'requestHandler' | 'region' | 'endpoint' | 'credentials'> = {},
): ReturnType<typeof snsEventPublisher> | undefined {
  if (!topicArn) return undefined;
  return snsEventPublisher(topicClient(config), topicArn);
}
