// Names the worker refuses today (control and bidi characters, docs/contract.md) can still be in a table: it
// keeps what was stored before that rule. Tests that show such names are displayed safely send bodies with
// plain stand-ins and write them through this store, which puts the hostile names in their place.
import type { DynamoTaskStore } from '../../lib/aws/dynamo/read/task-store.ts';
import type { Capacity, DeliveredCallback, QuarantineEntry } from '../../lib/domain/task-store.ts';
import type { TaskBatch } from '../../lib/aws/dynamo/batch/steps.ts';
import { batchWriterOf } from '../../lib/aws/dynamo/batch/apply-batch.ts';

/** stand-in -> the name it stands for. */
export type NameStandIns = Readonly<Record<string, string>>;

function replaceIn(text: string, standIns: NameStandIns, spell: (name: string) => string): string {
  let out = text;
  for (const [standIn, name] of Object.entries(standIns)) out = out.replaceAll(standIn, spell(name));
  return out;
}

/** Every string in a value with each stand-in replaced by its name. */
export function withNames<T>(value: T, standIns: NameStandIns): T {
  if (typeof value === 'string') return replaceIn(value, standIns, (name) => name) as T;
  if (Array.isArray(value)) return value.map((v) => withNames(v, standIns)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withNames(v, standIns)])) as T;
  }
  return value;
}

/** A raw JSON body with each stand-in replaced by its name, escaped as JSON writes it. */
function rawWithNames(raw: string, standIns: NameStandIns): string {
  return replaceIn(raw, standIns, (name) => JSON.stringify(name).slice(1, -1));
}

/** A writer that stores what it is given with the stand-ins replaced, as a table from before the rule holds it. */
export function storedBeforeTheNameRule(store: DynamoTaskStore, standIns: NameStandIns) {
  const delivered = (d: DeliveredCallback): DeliveredCallback => ({
    ...withNames(d, standIns),
    raw: rawWithNames(d.raw, standIns),
  });
  const name = (text: string) => withNames(text, standIns);
  return batchWriterOf({
    applyCallback: (d: DeliveredCallback) => store.applyCallback(delivered(d)),
    applyUncounted: (d: DeliveredCallback) => store.applyUncounted(delivered(d)),
    quarantine: (entry: QuarantineEntry) =>
      store.quarantine({ ...withNames(entry, standIns), raw: rawWithNames(entry.raw, standIns) }),
    absorbedSequence: (appKey: string, id: string, capacity?: Capacity) =>
      store.absorbedSequence(name(appKey), name(id), capacity),
    countTask: (batch: TaskBatch, capacity?: Capacity) => store.countTask(withNames(batch, standIns), capacity),
    recountTask: (appKey: string, id: string, through: string | null) =>
      store.recountTask(name(appKey), name(id), through),
  });
}
