// Tasks as read beside the files' verifications (docs/verification.md): a task as the CLI and the read API print it
// when no file of it has been checked in its storage yet (applied by the worker alone, no verifier), and a task as
// read with its verifications taken out, for tests of what the worker alone decides.
import type { Task } from '../../lib/domain/task.ts';
import { type VerifiedFileView, verificationOf } from '../../lib/domain/verification.ts';

/** Each uploaded file `pending`, any other without a verification. */
export function withPendingVerifications(task: Task): Task & { files: VerifiedFileView[] } {
  return { ...task, files: task.files.map((f) => ({ ...f, verification: verificationOf(f, undefined) })) };
}

/** A task as read, without its files' verifications: what the worker alone decides (the fold of its callbacks). */
export function withoutVerifications(task: Task | null): Task | null {
  if (!task) return task;
  return { ...task, files: task.files.map(({ verification: _, ...file }: Partial<VerifiedFileView>) => file) } as Task;
}
