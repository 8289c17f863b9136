// The names the local stack and the CLI share with the deployed stack. Every setting of the functions,
// queues, topics and routes comes from the packaged template instead (devkit/local/template.ts);
// deployed-settings.test.ts checks that these names are the template's.

export const SERVICE = 'rtc-callbacks-receiver';
/** The local stack is the stage `local` of the service: its resources carry the deployed names. */
export const LOCAL_STAGE = 'local';
export const LOCAL_REGION = 'us-east-1';
/** The account of the local resources' ARNs: the one fauxqs names its queues and topics with. */
export const LOCAL_ACCOUNT_ID = '000000000000';
/** What the emulators are signed with: they check no credential, the SDK insists on one. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

/** The names infra/ gives a stage's resources (the CLI finds a deployed stage's resources by them). */
export const resourceNames = (stage: string, service: string = SERVICE) => ({
  table: `${service}-${stage}-tasks`,
  queue: `${service}-${stage}-callbacks.fifo`,
  deadLetterQueue: `${service}-${stage}-callbacks-dlq.fifo`,
  /** infra/events.yml */
  eventsTopic: `${service}-${stage}-task-events`,
  /** Local only: the queue subscribed to the topic that `callbacks events tail` and `callbacks verify` read. */
  eventsQueue: `${service}-${stage}-task-events-tail`,
});
