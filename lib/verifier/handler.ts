// The verifier's Lambda handler, built from an environment: functions/verifier.ts builds it once per container from
// process.env; the local stack builds one per stack from the template's. It is invoked three ways: by its queue (SQS
// records: file events to check and keep), on its schedule (an EventBridge event: a sweep of the storage incidents),
// and by `callbacks storage probe` (`{"probe": {"appKey": ...}}`: a probe of each storage its settings allow, the
// results returned).
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { ClientSettings } from '../aws/clients.ts';
import type { ProbeResult } from '../domain/storage-incidents.ts';
import { invocationRunner } from '../log.ts';
import { buildVerifierDependencies } from './config.ts';
import { sweepIncidents, type IncidentSweepSummary } from './incidents.ts';
import { processVerifyBatch } from './verify-batch.ts';

/** What `callbacks storage probe` asks, and what it gets: each appKey's probe (null: its setting allows none). */
export interface ProbeRequest {
  probe: { appKey?: string };
}
export type ProbeReport = { appKey: string; storage: string | null; probe: ProbeResult | null }[];

export type VerifierHandler = (
  event: SQSEvent | ProbeRequest | { source?: string },
  context?: Pick<Context, 'awsRequestId'>,
) => Promise<SQSBatchResponse | IncidentSweepSummary | ProbeReport>;

/** The settings, clients and storage checks are built once, here: a bad setting throws (the function won't start). */
export function createVerifierHandler(
  env: Readonly<Record<string, string | undefined>>,
  clients: ClientSettings = {},
): VerifierHandler {
  const deps = buildVerifierDependencies(env, undefined, clients);
  const invocation = invocationRunner();
  return (event, context) =>
    invocation(context, async () => {
      if ('Records' in event && Array.isArray(event.Records)) {
        const { batchItemFailures } = await processVerifyBatch(event, deps);
        return { batchItemFailures };
      }
      if ('probe' in event) {
        const appKeys = event.probe.appKey ? [event.probe.appKey] : deps.storage.appKeys();
        return Promise.all(
          appKeys.map(async (appKey) => ({
            appKey,
            storage: deps.storage.storageOf(appKey),
            probe: await deps.storage.probe(appKey),
          })),
        );
      }
      // The schedule: one line per sweep, which the storage incidents' alarm reads.
      const summary = await sweepIncidents(Date.now(), deps);
      deps.log.info('storage_sweep_done', { ...summary });
      return summary;
    });
}
