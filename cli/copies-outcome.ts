// How the copies a command sent to the callback queue came out, as the worker noted them (lib/worker/message-notes.ts,
// for the messages marked `resentBy`): `callbacks dlq redrive --wait` and `callbacks replay` wait for the notes of
// their copies, then count each outcome.
import { readMessageNotes } from '../lib/aws/dynamo/write/message-notes.ts';
import { TableReader } from '../lib/aws/dynamo/table/table-client.ts';
import { isFinalOutcome, type MessageNote } from '../lib/domain/message-notes.ts';
import { type Colors, styled } from './format.ts';
import type { Context } from './inspect.ts';

/** A copy sent: the id SQS gave it (its note's key), with what the command knows of it. */
export interface SentCopy {
  copyId: string;
}

/** How the copies came out, as the worker noted them. */
export interface WaitedCopies<T extends SentCopy = SentCopy> {
  applied: number;
  duplicate: number;
  quarantined: number;
  /** Failed: given up, or failing when the wait ended (the cause is not fixed). */
  failedAgain: number;
  /** Not taken by the worker by the end of the wait. */
  unseen: number;
  messages: (T & { outcome: MessageNote['outcome'] | null; error: string | null })[];
}

/** A note that will not change: a final outcome, or a failure (its next receive is a visibility time-out away). */
const settled = (note: MessageNote | undefined) =>
  note !== undefined && (isFinalOutcome(note.outcome) || note.outcome === 'failed');

/**
 * Reads the worker's notes of the copies until each has a final one (applied, duplicate, quarantined, given up) or
 * `timeoutMs` has passed; each pass reads only the notes still awaited. A copy failing before its last receive is
 * counted as failed: its next receive is a visibility time-out away, and the cause is not fixed.
 */
export async function waitForCopies<T extends SentCopy>(
  ctx: Context,
  copies: readonly T[],
  timeoutMs: number,
  onNoted?: (noted: number) => void,
): Promise<WaitedCopies<T>> {
  const table = new TableReader(ctx.target.dynamo, ctx.target.tableName);
  const deadline = Date.now() + timeoutMs;
  const notes = new Map<string, MessageNote>();
  let awaited = copies.map((c) => c.copyId).filter(Boolean);
  for (;;) {
    for (const [id, note] of await readMessageNotes(table, awaited)) notes.set(id, note);
    awaited = awaited.filter((id) => !settled(notes.get(id)));
    onNoted?.(copies.length - awaited.length);
    if (awaited.length === 0 || Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(0, deadline - Date.now()))));
  }
  const waited: WaitedCopies<T> = {
    applied: 0,
    duplicate: 0,
    quarantined: 0,
    failedAgain: 0,
    unseen: 0,
    messages: [],
  };
  for (const copy of copies) {
    const note = notes.get(copy.copyId);
    const outcome = note?.outcome ?? null;
    if (outcome === null) waited.unseen += 1;
    else if (outcome === 'failed' || outcome === 'given_up') waited.failedAgain += 1;
    else waited[outcome] += 1;
    waited.messages.push({ ...copy, outcome, error: note?.error ?? null });
  }
  return waited;
}

/** What the counts are called: a redrive's copies fail again, a replay's fail; a replay's are set aside. */
interface OutcomeWords {
  quarantined: string;
  failed: string;
}

const REDRIVE_WORDS: OutcomeWords = { quarantined: 'quarantined', failed: 'failed again' };

/** `The worker took them: 3 applied, 1 duplicate (applied before), 0 quarantined, 0 failed again.` */
export function waitedLine(w: WaitedCopies, timeoutMs: number, c: Colors, words = REDRIVE_WORDS): string {
  const failed = w.messages.find((m) => m.outcome === 'failed' || m.outcome === 'given_up');
  const again =
    w.failedAgain > 0
      ? c.red(`${w.failedAgain} ${words.failed} (${failed?.error ?? 'see the worker log'})`)
      : c.green(`0 ${words.failed}`);
  const unseen = w.unseen > 0 ? c.yellow(`, ${w.unseen} not taken by the worker within ${timeoutMs / 1000} s`) : '';
  return styled`The worker took them: ${c.green(`${w.applied} applied`)}, ${w.duplicate} duplicate (applied before), ${
    w.quarantined
  } ${words.quarantined}, ${again}${unseen}.`;
}
