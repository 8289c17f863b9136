// The expressions of a count update (./header-counts.ts): the counts added, the sequence number absorbed, the
// tally joined, the completion, and the clauses others add to the same write (the deadlines), which a held
// header put applies to its item instead.
import { storedError } from '../table/error-facts.ts';
import { COUNT_ATTRS } from '../table/items.ts';
import { isZero, type TaskCounts } from '../../../domain/task-counts.ts';
import type { Tally } from '../../../domain/task.ts';
import { toItem, type Item } from '../table/table-client.ts';
import { READABLE, isoOf } from '../table/readable.ts';

/** More for a count update to set (attribute to value) and to remove (attributes). */
export interface CountClauses {
  set: Readonly<Record<string, unknown>>;
  remove: readonly string[];
}

/**
 * The update of one batch: `found`, the header as known (remembered, or as found when an attempt's condition
 * failed), on whose version it is made. `doneAt` is not the update's: a recount confirms the completion.
 */
export function countUpdate(
  change: TaskCounts,
  seq: string | null,
  tally: Tally,
  found: Item | null,
  extra: CountClauses | undefined,
) {
  const values: Record<string, unknown> = { ':one': 1 };
  const sets = ['ver = ver + :one'];
  for (const [attr, value] of Object.entries(extra?.set ?? {})) {
    sets.push(`${attr} = :x_${attr}`);
    values[`:x_${attr}`] = value;
  }
  const removes = extra?.remove.length ? ` REMOVE ${extra.remove.join(', ')}` : '';
  if (!isZero(change)) {
    for (const [k, attr] of Object.entries(COUNT_ATTRS) as [keyof TaskCounts, string][]) {
      if (change[k] === 0) continue;
      sets.push(`${attr} = ${attr} + :${attr}`);
      values[`:${attr}`] = change[k];
    }
  }
  const conditions = ['attribute_exists(nEvents)'];
  if (seq !== null) {
    sets.push('seq = :s');
    values[':s'] = seq;
    conditions.push('(attribute_not_exists(seq) OR seq < :s)');
  }
  setTally(sets, values, tally);
  const names: Record<string, string> = {};
  if (found) {
    conditions.push(found.ver === undefined ? 'attribute_not_exists(ver)' : 'ver = :v');
    values[':v'] = found.ver;
  } else {
    if (tally.updatedAt !== null) conditions.push('(attribute_not_exists(updatedAt) OR updatedAt <= :u)');
    if (tally.lastError) {
      conditions.push('(attribute_not_exists(lastError) OR lastError.#rank <= :r)');
      names['#rank'] = 'rank';
      values[':r'] = tally.lastError.rank;
    }
  }
  return {
    update: `SET ${sets.join(', ')}${removes}`,
    condition: conditions.join(' AND '),
    ...(Object.keys(names).length ? { names } : {}),
    values: toItem(values),
  };
}

/** An item with `extra` applied, as the update would apply it: a held header put writes it with the counts. */
export function withClauses(item: Item, extra: CountClauses | undefined): Item {
  Object.assign(item, extra?.set);
  for (const attr of extra?.remove ?? []) delete item[attr];
  return item;
}

export function setTally(sets: string[], values: Record<string, unknown>, tally: Tally): void {
  if (tally.updatedAt !== null) {
    sets.push('updatedAt = :u', `${READABLE.updatedAtIso} = :uIso`);
    values[':u'] = tally.updatedAt;
    values[':uIso'] = isoOf(tally.updatedAt);
  }
  if (tally.lastError) {
    sets.push('lastError = :e');
    values[':e'] = storedError(tally.lastError);
  }
}
