// What the worker did with a queued message that an operator asks about: one it gave up at its last receive (it
// goes to the dead-letter queue: `callbacks dlq list` shows why), or a copy sent again by `callbacks dlq redrive`
// (`--wait` reports how each came out) or by `callbacks replay` (which reports the same). Keyed by the SQS message id,
// which a message keeps into the dead-letter queue. Written on those messages only, never on the path of a callback
// applied at its first receive.

/** The `resentBy` attribute `callbacks dlq redrive` sets on the copies it sends (lib/aws/sqs/dlq.ts). */
export const REDRIVE_SENDER = 'dlq-redrive';
/** The `resentBy` attribute `callbacks replay` sets on the archived callbacks it sends (lib/aws/sqs/replay.ts). */
export const REPLAY_SENDER = 'archive-replay';

/** Whether a copy sent by `resentBy` is noted: the senders that wait for how their copies came out. */
export const isNotedSender = (resentBy: string | undefined): boolean =>
  resentBy === REDRIVE_SENDER || resentBy === REPLAY_SENDER;

/** `failed`: failed at a receive before its last, to come again; `given_up`: failed at its last receive. */
export type NoteOutcome = 'applied' | 'duplicate' | 'quarantined' | 'failed' | 'given_up';

export interface MessageNote {
  messageId: string;
  outcome: NoteOutcome;
  /** Why it failed (`failed`, `given_up`), in one sentence; null otherwise. */
  error: string | null;
  /** The worker's clock, epoch ms. */
  at: number;
  /** The receive it was noted at (ApproximateReceiveCount). */
  receiveCount: number | null;
  service: string | null;
  appKey: string | null;
  taskId: string | null;
  type: number | null;
}

/**
 * Where the worker keeps its notes. A note of an outcome that stays (applied, duplicate, quarantined, given up) is
 * never replaced: a message applied, then reported failed behind another of its group, is noted applied.
 */
export interface MessageNotes {
  write(notes: readonly MessageNote[]): Promise<void>;
}

/** Whether the outcome is the message's last word: a failure before the last receive is not, it comes again. */
export const isFinalOutcome = (outcome: NoteOutcome): boolean => outcome !== 'failed';
