// Checks the task events a receiver published against an expectation (lib/domain/task-events.ts):
// every MUST event at least once, nothing outside MAY, duplicates allowed. Publishing follows the worker,
// so missing events are only final at the time-out; `poll` returns the events read since the last call.
import { checkPublished, type EventCheck, type ExpectedEvents } from '../domain/task-events.ts';

export interface PublishedEvent {
  id: string;
  type: string;
  task?: { id?: string };
}

export interface VerifyEventsOptions {
  expected: ExpectedEvents;
  poll: () => Promise<PublishedEvent[]>;
  timeoutMs: number;
  pollIntervalMs?: number;
}

export async function verifyEvents(opts: VerifyEventsOptions): Promise<EventCheck & { timedOut: boolean }> {
  const deadline = Date.now() + Math.max(0, opts.timeoutMs);
  const published: PublishedEvent[] = [];
  for (;;) {
    published.push(...(await opts.poll()));
    const check = checkPublished(opts.expected, published);
    if (check.missing.length === 0) {
      // Everything expected is there; one more read catches what was published in the meantime.
      published.push(...(await opts.poll()));
      return { ...checkPublished(opts.expected, published), timedOut: false };
    }
    if (Date.now() >= deadline) return { ...check, timedOut: true };
    await new Promise((r) => setTimeout(r, Math.min(opts.pollIntervalMs ?? 500, Math.max(0, deadline - Date.now()))));
  }
}
