// The worker's notes of what it did with the messages an operator asks about (lib/domain/message-notes.ts): each
// record given up at its last receive, with why (`callbacks dlq list`), and each copy `callbacks dlq redrive` or
// `callbacks replay` sent again, with how it came out (`dlq redrive --wait`, `replay`). Other records are not noted: a
// batch without failures at the last receive or copies sent again writes nothing more. A note that cannot be written
// is logged, never fails a record.
import type { SQSRecord } from 'aws-lambda';
import { isNotedSender, type MessageNote, type NoteOutcome } from '../domain/message-notes.ts';
import { Attr } from '../queue-message.ts';
import { errorSentence } from '../text.ts';
import type { BatchRecord } from '../domain/batch.ts';
import type { WorkerDeps } from './deps.ts';

/** The notes of a batch's records: those given up, and those `dlq redrive` and `replay` sent. */
function notesOfBatch(
  messages: readonly SQSRecord[],
  records: readonly BatchRecord[],
  givenUp: readonly boolean[],
  now: number,
): MessageNote[] {
  const notes: MessageNote[] = [];
  messages.forEach((record, i) => {
    const a = records[i]!;
    const p = a.parsed;
    const cb = p.kind === 'apply' ? p.callback : undefined;
    const resent = isNotedSender(record.messageAttributes?.[Attr.resentBy]?.stringValue);
    if (!givenUp[i] && !resent) return;
    const outcome: NoteOutcome = givenUp[i] ? 'given_up' : a.outcome;
    const failed = outcome === 'given_up' || outcome === 'failed';
    notes.push({
      messageId: record.messageId,
      outcome,
      error: failed ? (a.error ?? 'the worker failed it (its log says why)') : null,
      at: now,
      receiveCount: Number(record.attributes?.ApproximateReceiveCount) || null,
      service: record.messageAttributes?.[Attr.service]?.stringValue ?? null,
      appKey: cb?.appKey ?? (p.kind === 'aside' ? p.entry.appKey : null),
      taskId: cb?.id ?? (p.kind === 'aside' ? p.entry.taskId : null),
      type: cb?.type ?? null,
    });
  });
  return notes;
}

/** Writes the batch's notes, if any; a failure is logged (`message_notes_failed`), the records stay as they are. */
export async function noteMessages(
  messages: readonly SQSRecord[],
  records: readonly BatchRecord[],
  givenUp: readonly boolean[],
  deps: WorkerDeps,
): Promise<void> {
  if (!deps.notes) return;
  const notes = notesOfBatch(messages, records, givenUp, (deps.now ?? Date.now)());
  if (notes.length === 0) return;
  try {
    await deps.notes.write(notes);
  } catch (err) {
    deps.log.error('message_notes_failed', {
      messageIds: notes.map((n) => n.messageId),
      error: errorSentence(err),
    });
  }
}
