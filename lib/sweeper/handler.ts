// The sweeper's Lambda handler (on a schedule), built from an environment: functions/sweeper.ts builds it once
// per container from process.env; the local stack builds one per stack from the template's environment.
import type { Context } from 'aws-lambda';
import type { ClientSettings } from '../aws/clients.ts';
import { invocationRunner } from '../log.ts';
import { buildSweeperDependencies } from './config.ts';
import { sweep, type SweepSummary } from './sweep.ts';

export type SweeperHandler = (
  event: unknown,
  context?: Pick<Context, 'awsRequestId'> & Partial<Pick<Context, 'getRemainingTimeInMillis'>>,
) => Promise<SweepSummary>;

/** The settings and clients are built here, once: a bad setting throws (the function does not start). */
export function createSweeperHandler(
  env: Readonly<Record<string, string | undefined>>,
  clients: ClientSettings = {},
): SweeperHandler {
  const dependencies = buildSweeperDependencies(env, undefined, clients);
  const invocation = invocationRunner();
  return (_event, context) =>
    invocation(context, async () => {
      const timeLeft = context?.getRemainingTimeInMillis?.bind(context);
      const summary = await sweep(Date.now(), dependencies, timeLeft);
      // One line per sweep: the metrics of the facts found are read off it (infra/alarms.yml).
      dependencies.log.info('sweep_done', { ...summary });
      return summary;
    });
}
