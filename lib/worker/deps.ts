// What the worker's logic runs with: the store it writes to, its logger, where task events go and its limits.
// Built from the environment by config.ts for the function, by hand by the tests, the local stack and the
// bench.
import type { ArchiveWriter } from '../domain/archive.ts';
import type { EventPublisher } from '../domain/event-publisher.ts';
import type { MessageNotes } from '../domain/message-notes.ts';
import type { TimeSettings } from '../domain/deadlines.ts';
import type { BatchWriter } from '../domain/batch.ts';
import type { Logger } from '../log.ts';

/** Tasks of one batch in flight at once: enough to overlap DynamoDB round trips, few enough not to throttle. */
export const DEFAULT_RECORD_CONCURRENCY = 5;

/** The queue's maxReceiveCount when none is given (the template's default). */
export const DEFAULT_MAX_RECEIVE_COUNT = 5;

export interface WorkerDeps {
  /** Where a batch is applied: its records' outcomes, and its tasks' events (lib/domain/batch.ts). */
  store: BatchWriter;
  log: Logger;
  /** Where task events go; absent, none are published. */
  events?: EventPublisher;
  /** Where every stored record's raw callback is archived (lib/worker/archive-batch.ts); absent, none is. */
  archive?: ArchiveWriter;
  /** Where the messages given up or sent again are noted (lib/domain/message-notes.ts); absent, none are. */
  notes?: MessageNotes;
  /** Records applied at the same time within one batch (default: DEFAULT_RECORD_CONCURRENCY). */
  concurrency?: number;
  /** The queue's maxReceiveCount: a record failing its last receive goes to the dead-letter queue (default 5). */
  maxReceiveCount?: number;
  now?: () => number;
  /** The stage's durations (a resumed task's stall time in its event); default lib/domain/deadlines.ts. */
  time?: TimeSettings;
}
