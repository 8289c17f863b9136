// The port through which the worker and the quarantine's second check announce task events: the domain
// declares what it needs, an adapter (the SNS topic in lib/aws/sns/task-events.ts) provides it.
import type { StorageEvent } from './storage-incidents.ts';
import type { TaskEvent } from './task-events.ts';

/** Publishes task events: resolves once every event is published, throws when any was refused. */
export interface EventPublisher {
  publish(events: readonly TaskEvent[]): Promise<void>;
}

/** Publishes storage events (storage incidents) to the same topic, as EventPublisher does task events. */
export interface StoragePublisher {
  publish(events: readonly StorageEvent[]): Promise<void>;
}
