// The template's scheduled functions (EventBridge rules: the sweeper), run by the local stack every few seconds
// rather than on their deployed schedule, one run at a time, each invoked as Lambda invokes it, under its role.
import type { Logger } from '../../lib/log.ts';
import type { LocalInvoke } from './lambda-invoke.ts';
import type { ScheduleSettings } from './stack-template.ts';

export interface LocalSchedules {
  /** Runs every scheduled function once now (after the run in progress), and returns what each answered. */
  runNow(): Promise<unknown[]>;
  stop(): Promise<void>;
}

/** A scheduled event as EventBridge sends it. */
function scheduledEvent(expression: string) {
  return {
    version: '0',
    id: crypto.randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    time: new Date().toISOString(),
    detail: {},
    resources: [],
    schedule: expression,
  };
}

export function startLocalSchedules(
  schedules: readonly ScheduleSettings[],
  invokers: Record<string, LocalInvoke>,
  everyMs: number,
  log: Logger,
): LocalSchedules {
  let running: Promise<unknown[]> = Promise.resolve([]);
  let stopped = false;
  const runAll = () =>
    Promise.all(
      schedules.map(async (s) => {
        try {
          return await invokers[s.functionKey]!(scheduledEvent(s.expression));
        } catch (err) {
          log.error('scheduled_run_failed', { function: s.functionKey, error: (err as Error).message });
          return null;
        }
      }),
    );
  const runNow = () => {
    running = running.then(runAll, runAll);
    return running;
  };
  const timer = everyMs > 0 && schedules.length > 0 ? setInterval(() => void (stopped || runNow()), everyMs) : null;
  timer?.unref();
  return {
    runNow,
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await running.catch(() => undefined);
    },
  };
}
