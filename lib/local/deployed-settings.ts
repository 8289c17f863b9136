// The deployed stack's names and queue settings, mirrored by the local stack so that it behaves as the
// deployment does. Source of truth: serverless.yml (the worker's SQS event) and infra/queues.yml;
// deployed-settings.test.ts fails when the two drift apart.

export const SERVICE = 'rtc-callbacks-receiver';
/** The local stack is the stage `local` of the service: its resources carry the deployed names. */
export const LOCAL_STAGE = 'local';
export const LOCAL_REGION = 'us-east-1';
/** What the emulators are signed with: they check no credential, the SDK insists on one. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

/** The names infra/ gives a stage's resources. */
export const resourceNames = (stage: string, service: string = SERVICE) => ({
  table: `${service}-${stage}-tasks`,
  queue: `${service}-${stage}-callbacks.fifo`,
  deadLetterQueue: `${service}-${stage}-callbacks-dlq.fifo`,
  /** infra/events.yml */
  eventsTopic: `${service}-${stage}-task-events`,
  /** Local only: the queue subscribed to the topic that `callbacks events tail` and `callbacks verify` read. */
  eventsQueue: `${service}-${stage}-task-events-tail`,
});

/** infra/queues.yml */
export const queueSettings = {
  /** Both queues are FIFO, in high-throughput mode; the ingest names each deduplication id. */
  fifo: {
    FifoQueue: 'true',
    ContentBasedDeduplication: 'false',
    DeduplicationScope: 'messageGroup',
    FifoThroughputLimit: 'perMessageGroupId',
  },
  /** Seconds a received message stays invisible: six times the worker's 30 s time-out. */
  visibilityTimeoutS: 180,
  /** Receives before SQS moves a message to the dead-letter queue. */
  maxReceiveCount: 5,
  /** Seconds (4 days). */
  retentionS: 345_600,
  /** Seconds (14 days). */
  deadLetterRetentionS: 1_209_600,
} as const;

/** serverless.yml, functions.worker.events[0].sqs: the event source mapping. */
export const eventSourceMapping = {
  batchSize: 10,
  /** maximumBatchingWindow, seconds: none on a FIFO queue. */
  batchingWindowS: 0,
  maximumConcurrency: 10,
} as const;
