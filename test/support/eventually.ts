// Waiting in a test for what nothing announces to it: a task a stack's worker applied in the background, a
// queue drained, a line a function logged. One way for every test: the probe again every `everyMs` until
// `done` accepts what it returned, and a failure that says what was awaited and what was seen last.

export interface EventuallyOptions {
  /** How long before giving up (default 20 s). */
  timeoutMs?: number;
  /** Time between two probes (default 50 ms). */
  everyMs?: number;
}

/** What `done` accepts by default: anything but undefined, null and false. */
const present = (value: unknown): boolean => value !== undefined && value !== null && value !== false;

function shown(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text === undefined || text.length <= 300 ? String(text) : `${text.slice(0, 300)}…`;
}

/** The probe's first value that `done` accepts; rejects after `timeoutMs`, naming `what` and the last value. */
export async function eventually<T>(
  what: string,
  probe: () => T | Promise<T>,
  done: (value: T) => boolean = present,
  opts: EventuallyOptions = {},
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms (last seen: ${shown(value)})`);
    await new Promise((resolve) => setTimeout(resolve, opts.everyMs ?? 50));
  }
}
