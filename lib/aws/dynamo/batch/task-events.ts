// The task events of a batch's writes to one task: read off the task as its header update returned it
// (lib/domain/task-events.ts says which events a write makes true), published by the worker together once every
// write is durable.
import { type BatchRecord, type EventsToPublish, failPublishing } from '../../../domain/batch.ts';
import { REPLAY_SENDER } from '../../../domain/message-notes.ts';
import { eventsOfWrite, publishesFileEvents, type TaskEvent, writeMayPublish } from '../../../domain/task-events.ts';
import type { TaskParts } from '../../../domain/task-parts.ts';
import type { FileRecord } from '../../../domain/task.ts';
import { errorSentence } from '../../../text.ts';

/**
 * A callback `callbacks replay` sent again that its task already holds: its events are not published again. They went
 * out with its own message (whose redeliveries, and the redrive of its dead letter, publish what did not), and once
 * more they would only make every subscriber do its work again (the verifier would check the file again).
 */
const replayedDuplicate = (r: BatchRecord): boolean => r.outcome === 'duplicate' && r.resentBy === REPLAY_SENDER;

/**
 * The task events of the writes to one task, read off the task as its header update returned it, with the files
 * the writes left: no read of the task. Records without sequence numbers (several batches of a task may be applied
 * at once) read the task whole after the update instead, as a header can then say an end before another batch
 * has counted the file it names.
 */
export async function eventsOfTask(
  records: readonly BatchRecord[],
  counted: TaskParts | null,
  unordered: boolean,
): Promise<EventsToPublish> {
  const publishing = records.filter((r) => {
    const write = r.result?.write;
    const may = !!write && writeMayPublish(r.cb!, r.outcome === 'applied', write.file);
    if (r.result) r.events = 0;
    return may && r.outcome !== 'failed' && !replayedDuplicate(r);
  });
  if (publishing.length === 0) return { records: [], events: [] };
  let parts = counted;
  try {
    parts = unordered
      ? await publishing[0]!.result!.write!.readParts()
      : counted && (await withAttempts(counted, publishing));
  } catch (err) {
    failPublishing(publishing, errorSentence(err));
    return { records: [], events: [] };
  }
  const events = new Map<string, TaskEvent>();
  for (const r of publishing) {
    const stored = r.result!.write!.storedWith(parts);
    const own = stored ? eventsOfWrite(r.cb!, stored) : [];
    r.events = own.length;
    // Two writes that make the same event true publish it once: the same id, and the same time, read off
    // the same stored task (lib/domain/task-events.ts).
    for (const event of own) if (!events.has(event.id)) events.set(event.id, event);
  }
  return { records: publishing.filter((r) => (r.events ?? 0) > 0), events: [...events.values()] };
}

/** The task's files that writes publish events of, their attempts counted (a file event shows them). */
async function withAttempts(parts: TaskParts, publishing: readonly BatchRecord[]): Promise<TaskParts> {
  const counted = new Map<string, FileRecord>();
  for (const r of publishing) {
    const write = r.result!.write!;
    if (!write.file || !publishesFileEvents(r.cb!, write.file) || counted.has(write.file.after.fileName)) continue;
    const file = await write.fileAfter();
    if (file) counted.set(file.fileName, file);
  }
  return { ...parts, files: parts.files.map((f) => counted.get(f.fileName) ?? f) };
}
