// On a schedule (serverless.yml): finds the facts of time that are due (lost files, purge warnings, stalled and
// settled tasks) and publishes them. The settings and clients are built once per container, at load; the logic
// is lib/sweeper/.
import type { Context } from 'aws-lambda';
import { invocationRunner } from '../lib/log.ts';
import { buildSweeperDependencies } from '../lib/sweeper/config.ts';
import { sweep, type SweepSummary } from '../lib/sweeper/sweep.ts';

const dependencies = buildSweeperDependencies(process.env);
const invocation = invocationRunner();

export async function handler(_event: unknown, context?: Pick<Context, 'awsRequestId'>): Promise<SweepSummary> {
  return invocation(context, async () => {
    const summary = await sweep(Date.now(), dependencies);
    // One line per sweep: the metrics of the facts found are read off it (infra/alarms.yml).
    dependencies.log.info('sweep_done', { ...summary });
    return summary;
  });
}
