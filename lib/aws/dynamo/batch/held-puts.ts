// What a batch leaves to write once its records are applied: a file's put held for a later record of the same
// file to carry, and the deadline entries of the tasks it created. A record whose put or entries are not written
// fails: it comes again, and finds the table as it is.
import { type BatchContext, type BatchRecord, failStored } from '../../../domain/batch.ts';
import { fileNameOf } from '../../../domain/task.ts';
import { compositeKey, errorSentence } from '../../../text.ts';
import type { ItemGroup } from './batch-plan.ts';
import type { BatchSteps, UnarmedTask } from './steps.ts';

/**
 * The records of one file before a record that failed: each left its put held for the next to carry, and a put
 * that failed carrying them lost them. They fail with it (and come again, or, at their last receive, go to the
 * dead-letter queue with it): reported done, they would be callbacks the queue dropped and no item recorded.
 */
export function failCarried(group: ItemGroup): void {
  const failedAt = group.findIndex((r) => r.outcome === 'failed');
  failStored(group.slice(0, Math.max(0, failedAt)), 'a later callback of its file failed', 'record_failed_with_file');
}

/**
 * Writes the put a file's records left held, when the last of them wrote none (a duplicate, a refusal, a
 * failure). When that fails, the file's callbacks are not stored: their records fail, and come again.
 */
export async function writeHeld(group: ItemGroup, steps: BatchSteps): Promise<void> {
  const cb = group.find((r) => r.cb)?.cb;
  const fileName = cb ? fileNameOf(cb) : null;
  if (!cb || !fileName || !steps.writeHeld) return;
  try {
    await steps.writeHeld(cb.appKey, cb.id, fileName);
  } catch (err) {
    failStored(group, errorSentence(err), 'callback_failed', 'error');
  }
}

/**
 * The deadline entries of the tasks the batch created (one write for all of them). The records of a task whose
 * entries cannot be written fail, and only those: they come again, and their task, found created, is armed then.
 */
export async function flushArms(records: readonly BatchRecord[], steps: BatchSteps, ctx: BatchContext): Promise<void> {
  let unarmed: UnarmedTask[];
  try {
    unarmed = (await steps.flushArms?.()) ?? [];
  } catch (error) {
    // Which tasks it did not say: every task of the batch.
    unarmed = records.flatMap((r) => (r.cb ? [{ appKey: r.cb.appKey, id: r.cb.id, error }] : []));
  }
  const failing = new Map<string, string>();
  for (const { appKey, id, error } of unarmed) {
    const task = compositeKey(appKey, id);
    if (failing.has(task)) continue;
    failing.set(task, errorSentence(error));
    ctx.log.error('task_arming_failed', { appKey, id, error: errorSentence(error) });
  }
  for (const r of records) {
    const ok = r.outcome === 'applied' || r.outcome === 'duplicate';
    const error = ok && r.cb ? failing.get(compositeKey(r.cb.appKey, r.cb.id)) : undefined;
    if (error === undefined) continue;
    r.outcome = 'failed';
    r.error = `its task's deadline could not be written: ${error}`;
  }
}
