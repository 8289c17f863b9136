// The task events of a batch: read off each task as its header update returned it, and published together
// once every write is durable (lib/domain/task-events.ts says which events a write makes true).
import type { EventPublisher } from '../domain/event-publisher.ts';
import { REPLAY_SENDER } from '../domain/message-notes.ts';
import { eventsOfWrite, publishesFileEvents, writeMayPublish, type TaskEvent } from '../domain/task-events.ts';
import type { TaskParts } from '../domain/task-parts.ts';
import type { FileRecord } from '../domain/task.ts';
import type { Applied } from './apply-record.ts';
import { errorSentence } from '../text.ts';

/** The task events of one task's writes in a batch, and the writes that have some. */
export interface TaskEvents {
  writes: Applied[];
  events: TaskEvent[];
}

/** Logs why the events of some writes are not out, and fails their records: redelivered, they publish again. */
function failPublishing(failed: readonly Applied[], err: unknown): void {
  // The writes are durable; their events are not out.
  for (const a of failed) {
    a.error = `its task events could not be published: ${errorSentence(err)}`;
    a.log.error('events_publish_failed', {
      ...a.fields,
      outcome: a.outcome,
      events: a.events ?? 0,
      error: errorSentence(err),
    });
    a.outcome = 'failed';
  }
}

/**
 * A callback `callbacks replay` sent again that its task already holds: its events are not published again. They went
 * out with its own message (whose redeliveries, and the redrive of its dead letter, publish what did not), and once
 * more they would only make every subscriber do its work again (the verifier would check the file again).
 */
const replayedDuplicate = (a: Applied): boolean => a.outcome === 'duplicate' && a.resentBy === REPLAY_SENDER;

/**
 * The task events of the writes to one task (lib/domain/task-events.ts), read off the task as its header
 * update returned it, with the files the writes left: no read of the task. Records without sequence numbers
 * (several batches of a task may be applied at once) read the task whole after the update instead, as a
 * header can then say an end before another batch has counted the file it names.
 */
export async function eventsOfTask(
  writes: Applied[],
  counted: TaskParts | null,
  unordered: boolean,
): Promise<TaskEvents> {
  const publishing = writes.filter((a) => {
    const write = a.result?.write;
    const may = !!write && writeMayPublish(a.cb!, a.outcome === 'applied', write.file);
    if (a.result) a.events = 0;
    return may && a.outcome !== 'failed' && !replayedDuplicate(a);
  });
  if (publishing.length === 0) return { writes: [], events: [] };
  let parts = counted;
  try {
    parts = unordered
      ? await publishing[0]!.result!.write!.readParts()
      : counted && (await withAttempts(counted, publishing));
  } catch (err) {
    failPublishing(publishing, err);
    return { writes: [], events: [] };
  }
  const events = new Map<string, TaskEvent>();
  for (const a of publishing) {
    const stored = a.result!.write!.storedWith(parts);
    const own = stored ? eventsOfWrite(a.cb!, stored) : [];
    a.events = own.length;
    // Two writes that make the same event true publish it once: the same id, and the same time, read off
    // the same stored task (lib/domain/task-events.ts).
    for (const event of own) if (!events.has(event.id)) events.set(event.id, event);
  }
  return { writes: publishing.filter((a) => (a.events ?? 0) > 0), events: [...events.values()] };
}

/** The task's files that writes publish events of, their attempts counted (a file event shows them). */
async function withAttempts(parts: TaskParts, publishing: readonly Applied[]): Promise<TaskParts> {
  const counted = new Map<string, FileRecord>();
  for (const a of publishing) {
    const write = a.result!.write!;
    if (!write.file || !publishesFileEvents(a.cb!, write.file) || counted.has(write.file.after.fileName)) continue;
    const file = await write.fileAfter();
    if (file) counted.set(file.fileName, file);
  }
  return { ...parts, files: parts.files.map((f) => counted.get(f.fileName) ?? f) };
}

/**
 * The batch's task events, published together (SNS takes ten a call) once every write is durable. When
 * they cannot all be published, every record that had events fails: its redelivery publishes them again
 * from what is stored.
 */
export async function publishAll(tasks: readonly TaskEvents[], publisher: EventPublisher): Promise<void> {
  const events = tasks.flatMap((t) => t.events);
  if (events.length === 0) return;
  try {
    await publisher.publish(events);
  } catch (err) {
    failPublishing(
      tasks.flatMap((t) => t.writes),
      err,
    );
  }
}
