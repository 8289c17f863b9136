// The batch's task events, published together (SNS takes ten a call) once every write is durable. When they
// cannot all be published, every record that had events fails: its redelivery publishes them again from what is
// stored.
import { type EventsToPublish, failPublishing } from '../domain/batch.ts';
import type { EventPublisher } from '../domain/event-publisher.ts';
import { errorSentence } from '../text.ts';

export async function publishBatch(tasks: readonly EventsToPublish[], publisher: EventPublisher): Promise<void> {
  const events = tasks.flatMap((t) => t.events);
  if (events.length === 0) return;
  try {
    await publisher.publish(events);
  } catch (err) {
    failPublishing(
      tasks.flatMap((t) => t.records),
      errorSentence(err),
    );
  }
}
