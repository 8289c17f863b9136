// The log lines of the local stacks started with `quiet` (tests, `callbacks dev --quiet`): silenced while any of them
// runs in this process, whichever order they start and stop in.
import { setLogSink, type LogSink } from '../../lib/log.ts';

/** The quiet stacks running in this process, and the log sink in place before the first of them started. */
let quietStacks = 0;
let sinkBeforeQuiet: LogSink | null = null;

/**
 * Silences the log lines while any quiet stack of this process runs: stacks stopped in another order than they
 * started (several at once in one test file) would each put back the sink the one before had set, and the lines of a
 * quiet stack still running reached stdout. Returns what a stack calls as it stops.
 */
export function silenceWhileRunning(): () => void {
  if (quietStacks++ === 0) sinkBeforeQuiet = setLogSink(() => {});
  return () => {
    if (--quietStacks === 0) setLogSink(sinkBeforeQuiet!);
  };
}
