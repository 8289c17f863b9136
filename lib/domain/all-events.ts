// A task's stored callbacks read whole, page after page, through the reader's port (./task-store.ts): for the
// commands that print or copy them all; the read API serves pages.
import type { ArchivedTask } from './archived-callbacks.ts';
import type { StoredEvent, TaskReader, TaskRef } from './task-store.ts';

/**
 * Every stored callback of a task, page after page (a page looks up a bounded number of them), and the task as the
 * archive files them; null when there is no such task.
 */
export async function allEventsOf(
  reader: TaskReader,
  ref: TaskRef,
): Promise<{ events: StoredEvent[]; task: ArchivedTask } | null> {
  const events: StoredEvent[] = [];
  let task: ArchivedTask | undefined;
  let cursor: string | undefined;
  do {
    const page = await reader.listEventsPage(ref, { limit: Number.POSITIVE_INFINITY, cursor });
    if (!page) return null;
    events.push(...page.items);
    task = page.task;
    cursor = page.next ?? undefined;
  } while (cursor);
  return { events, task: task! };
}

/** Every stored callback of a task, or null when there is no such task. */
export async function allEvents(reader: TaskReader, ref: TaskRef): Promise<StoredEvent[] | null> {
  return (await allEventsOf(reader, ref))?.events ?? null;
}
