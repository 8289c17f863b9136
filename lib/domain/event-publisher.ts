// The port through which the worker and the quarantine's second check announce task events: the domain
// declares what it needs, an adapter (the SNS topic in lib/aws/sns/task-events.ts) provides it.
import type { TaskEvent } from './task-events.ts';

/** Publishes task events: resolves once every event is published, throws when any was refused. */
export interface EventPublisher {
  publish(events: readonly TaskEvent[]): Promise<void>;
}
