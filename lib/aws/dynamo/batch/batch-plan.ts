// The order a batch's records are applied in. Records that write the same item (one file, or one task's header)
// are applied one after the other: side by side they would only conflict. Everything else goes in parallel,
// callbacks of one task too, the longest runs first, except that each task's lead group goes first.
import type { BatchRecord } from '../../../domain/batch.ts';
import { isHeaderEvent, fileNameOf } from '../../../domain/task.ts';
import { compositeKey } from '../../../text.ts';

/** The records of one item (a file, or a task's header), in batch order; a record kept aside is a group alone. */
export type ItemGroup = BatchRecord[];

/** A task of the batch: its records in batch order, its item groups, and the one that leads. */
export interface TaskOfBatch {
  appKey: string;
  id: string;
  records: BatchRecord[];
  groups: ItemGroup[];
  lead: ItemGroup;
}

export interface BatchPlan {
  /** Every group, in the order they are started: the leads first, then the others, the longest first. */
  groups: ItemGroup[];
  /** The task of each group (none for a record kept aside). */
  taskOf: Map<ItemGroup, TaskOfBatch>;
  tasks: TaskOfBatch[];
}

/**
 * The batch's item groups in the order they are started: each task's lead group first, the one that writes
 * its header (a start or an end) or else the one holding its first record, then the others, the longest
 * first. The other groups of a task wait for the first record of its lead: that record creates the header,
 * or reads it, and the others then know it, where side by side each would read it, or race to create it
 * (and move its index keys when an identity comes second). Leads are started before any group that waits,
 * so a wait never holds a slot a lead needs.
 */
export function planBatch(records: readonly BatchRecord[]): BatchPlan {
  const byItem = new Map<string, ItemGroup>();
  const tasks = new Map<string, TaskOfBatch>();
  const taskOf = new Map<ItemGroup, TaskOfBatch>();
  records.forEach((r, i) => {
    if (r.parsed.kind !== 'apply') {
      byItem.set(compositeKey(i), [r]);
      return;
    }
    const { appKey, id } = r.parsed.callback;
    const itemKey = compositeKey(appKey, id, fileNameOf(r.parsed.callback) ?? '');
    const group = byItem.get(itemKey) ?? [];
    if (group.length === 0) byItem.set(itemKey, group);
    group.push(r);
    const taskKey = compositeKey(appKey, id);
    const task = tasks.get(taskKey) ?? { appKey, id, records: [], groups: [], lead: group };
    if (task.records.length === 0) tasks.set(taskKey, task);
    task.records.push(r);
    if (!task.groups.includes(group)) task.groups.push(group);
    taskOf.set(group, task);
  });
  for (const task of tasks.values()) task.lead = leadOf(task.groups);
  const leads = new Set([...tasks.values()].map((t) => t.lead));
  const all = [...byItem.values()];
  const longestFirst = (a: ItemGroup, b: ItemGroup) => b.length - a.length;
  const groups = [
    ...all.filter((g) => leads.has(g)).sort(longestFirst),
    ...all.filter((g) => !leads.has(g)).sort(longestFirst),
  ];
  return { groups, taskOf, tasks: [...tasks.values()] };
}

/** The group that writes the task's header, or else the one holding its first record. */
function leadOf(groups: readonly ItemGroup[]): ItemGroup {
  return groups.find((g) => g.some((r) => r.parsed.kind === 'apply' && isHeaderEvent(r.parsed.callback))) ?? groups[0]!;
}
