// One rule for what the write path refuses before its first write, shared by the worker's write path and the
// ingest's replay claim (which stores such a callback's delivery unlisted: no callback of its task).
import type { Callback } from '../../../domain/callback.ts';
import { oversizedKey, tooDeep } from '../table/limits.ts';
import { unstorableNumberIn } from '../table/numbers.ts';

/**
 * Why the write path refuses a parsed callback before its first write (a key too long, a config nested too
 * deep, a number DynamoDB cannot store), or null: DynamoDB would refuse it every time.
 */
export function refusalOf(cb: Callback): string | null {
  return oversizedKey(cb) ?? tooDeep(cb) ?? unstorableNumberIn(cb);
}
