// The stand-ins of the template's SQS event source mappings (devkit/local/stack.ts): a poller per mapping, under
// the role of its function, invoking it (with the crashes asked for) and deleting or keeping what it answers.
import { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createLogger } from '../../lib/log.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from './deployed-settings.ts';
import { withCrashes } from './faults.ts';
import { enforceIam, type IamSession } from './iam/enforce.ts';
import { eventSourceMappingKey } from './iam/principals.ts';
import type { LocalInvoke } from './lambda-invoke.ts';
import { quietly } from './server-lifecycle.ts';
import { startSqsPoller, type PollerStats, type SqsPoller } from './sqs-poller.ts';
import type { EventSourceMappingSettings, FunctionSettings, QueueSettings } from './stack-template.ts';

/** The stand-in of one event source mapping: the queue it reads, what it did, the batches in hand. */
export interface LocalPoller {
  queueName: string;
  stats: Readonly<PollerStats>;
  busy(): number;
}

export interface PollersOptions {
  mapped: readonly { mapping: EventSourceMappingSettings; queue: QueueSettings; fn: FunctionSettings }[];
  /** The stack's queue (the FIFO one the ingest sends to): its poller is the stack's `poller`. */
  queue: QueueSettings;
  invokers: Readonly<Record<string, LocalInvoke>>;
  sqsEndpoint: string;
  iamSession: IamSession | undefined;
  retryDelaySeconds: number;
  /** Where each poller's stop and client's release are registered, undone with the stack. */
  resources: AsyncDisposableStack;
}

export function startPollers(o: PollersOptions): { pollers: LocalPoller[]; poller: SqsPoller } {
  let poller: SqsPoller | undefined;
  const pollers: LocalPoller[] = [];
  for (const { mapping, queue: mappedQueue, fn } of o.mapped) {
    const client = new SQSClient({ endpoint: o.sqsEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    o.resources.defer(() => client.destroy());
    if (o.iamSession) enforceIam(client, eventSourceMappingKey(fn.key), o.iamSession);
    const invoke = withCrashes(o.invokers[mapping.functionKey]!, mapping.functionKey);
    const started = startSqsPoller({
      sqs: client,
      queueUrl: mappedQueue.url,
      queueArn: mappedQueue.arn,
      region: LOCAL_REGION,
      handler: async (event: SQSEvent) => {
        const response = (await invoke(event)) as SQSBatchResponse | undefined;
        // Without ReportBatchItemFailures the mapping ignores what the function answers.
        return mapping.reportBatchItemFailures ? response : undefined;
      },
      batchSize: mapping.batchSize,
      batchingWindowMs: mapping.batchingWindowS * 1000,
      concurrency: mapping.maximumConcurrency,
      retryDelaySeconds: o.retryDelaySeconds,
      ...(mappedQueue.maxReceiveCount !== undefined ? { maxReceiveCount: mappedQueue.maxReceiveCount } : {}),
      log: createLogger('poller'),
    });
    o.resources.defer(quietly(() => started.stop()));
    pollers.push({ queueName: mappedQueue.name, stats: started.stats, busy: () => started.busy() });
    if (mappedQueue === o.queue) poller = started;
  }
  if (!poller) throw new Error(`no event source mapping reads the queue ${o.queue.name}`);
  return { pollers, poller };
}
