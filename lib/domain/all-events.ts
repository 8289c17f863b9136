// A task's stored callbacks read whole, page after page, through the reader's port (./task-store.ts): for the
// commands that print or copy them all; the read API serves pages.
import type { StoredEvent, TaskReader, TaskRef } from './task-store.ts';

/**
 * Every stored callback of a task, page after page (a page looks up a bounded number of them), or null
 * when there is no such task.
 */
export async function allEvents(reader: TaskReader, ref: TaskRef): Promise<StoredEvent[] | null> {
  const events: StoredEvent[] = [];
  let cursor: string | undefined;
  do {
    const page = await reader.listEventsPage(ref, { limit: Number.POSITIVE_INFINITY, cursor });
    if (!page) return null;
    events.push(...page.items);
    cursor = page.next ?? undefined;
  } while (cursor);
  return events;
}
