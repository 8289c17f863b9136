// Checks the task events a receiver published against an expectation (lib/domain/task-events.ts):
// every MUST event at least once, nothing outside MAY, duplicates allowed. Publishing follows the worker,
// so missing events are only final at the time-out; `poll` returns the events read since the last call.
import { checkPublished, type EventCheck, type ExpectedEvents } from '../../lib/domain/expected-events.ts';
import { isTimeEvent, type PublishedTimeEvent, type TimeEventCheck } from './time-facts.ts';

export type PublishedEvent = PublishedTimeEvent;

export interface VerifyEventsOptions {
  expected: ExpectedEvents;
  poll: () => Promise<PublishedEvent[]>;
  timeoutMs: number;
  pollIntervalMs?: number;
  /** The facts of time at the receiver's clock (devkit/verify/time-facts.ts); without it, their events are ignored. */
  time?: (published: readonly PublishedEvent[]) => TimeEventCheck;
}

export type EventsResult = EventCheck & { timedOut: boolean; time: TimeEventCheck | null };

export async function verifyEvents(opts: VerifyEventsOptions): Promise<EventsResult> {
  const deadline = Date.now() + Math.max(0, opts.timeoutMs);
  const published: PublishedEvent[] = [];
  // The callbacks' events are checked against the expectation, the facts of time against the clock.
  const checkAll = () => {
    const check = checkPublished(
      opts.expected,
      published.filter((e) => !isTimeEvent(e.type)),
    );
    const time = opts.time ? opts.time(published) : null;
    return { ...check, ok: check.ok && (time?.ok ?? true), time };
  };
  for (;;) {
    published.push(...(await opts.poll()));
    const check = checkAll();
    if (check.missing.length === 0 && (check.time?.missing.length ?? 0) === 0) {
      // Everything expected is there; one more read catches what was published in the meantime.
      published.push(...(await opts.poll()));
      return { ...checkAll(), timedOut: false };
    }
    if (Date.now() >= deadline) return { ...check, timedOut: true };
    await new Promise((r) => setTimeout(r, Math.min(opts.pollIntervalMs ?? 500, Math.max(0, deadline - Date.now()))));
  }
}
