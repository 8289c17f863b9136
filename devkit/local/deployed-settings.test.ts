// The local stack reads its settings from the packaged template: these tests hold what it reads to what
// serverless.yml and infra/ declare, and the names the CLI shares with deployed stages to the template's.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { LOCAL_STAGE, SERVICE, resourceNames } from './deployed-settings.ts';
import { localStageSettings } from './stack-template.ts';
import { loadTemplate } from './template.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const yaml = (path: string) => parse(readFileSync(`${root}/${path}`, 'utf8'), { logLevel: 'silent' });
const settings = localStageSettings();

test('the event source mappings are the sqs events of serverless.yml: the worker and the verifier', () => {
  const sls = yaml('serverless.yml');
  const mapping = (functionKey: string, queue: string) => {
    const event = sls.functions[functionKey].events[0].sqs;
    return {
      queue,
      functionKey,
      batchSize: event.batchSize,
      // A FIFO queue's mapping has no batching window; the verifier's has none either.
      batchingWindowS: event.maximumBatchingWindow ?? 0,
      reportBatchItemFailures: event.functionResponseType === 'ReportBatchItemFailures',
      maximumConcurrency: event.maximumConcurrency,
    };
  };
  expect(settings.mappings).toEqual([mapping('worker', 'CallbackFifoQueue'), mapping('verifier', 'VerifyQueue')]);
});

test('each function has the memory, time-out, role and plain variables of serverless.yml', () => {
  const sls = yaml('serverless.yml');
  for (const fn of settings.functions) {
    const declared = sls.functions[fn.key];
    expect([fn.memoryMb, fn.timeoutS, fn.roleLogicalId]).toEqual([
      declared.memorySize,
      declared.timeout,
      declared.role,
    ]);
    for (const [name, value] of Object.entries(declared.environment as Record<string, unknown>)) {
      if (typeof value === 'string') expect([name, fn.environment[name]]).toEqual([name, value]);
    }
  }
  expect(settings.functions.map((f) => f.key).sort()).toEqual(Object.keys(sls.functions).sort());
});

test('the callback queues carry the settings of infra/queues.yml, the dead-letter queue first, both FIFO', () => {
  const declared = yaml('infra/queues.yml').Resources;
  const queues = settings.queues.filter((q) => q.logicalId.startsWith('Callback'));
  expect(queues.map((q) => q.logicalId)).toEqual(['CallbackFifoDeadLetterQueue', 'CallbackFifoQueue']);
  const main = queues[1]!;
  expect(main.visibilityTimeoutS).toBe(declared.CallbackFifoQueue.Properties.VisibilityTimeout);
  expect(main.maxReceiveCount).toBe(declared.CallbackFifoQueue.Properties.RedrivePolicy.maxReceiveCount);
  expect(main.deadLetterQueue).toBe('CallbackFifoDeadLetterQueue');
  for (const queue of queues) {
    const fixed = declared[queue.logicalId].Properties;
    expect(queue.fifo).toBe(true);
    expect(queue.createAttributes).toEqual({
      FifoQueue: String(fixed.FifoQueue),
      ContentBasedDeduplication: String(fixed.ContentBasedDeduplication),
      DeduplicationScope: fixed.DeduplicationScope,
      FifoThroughputLimit: fixed.FifoThroughputLimit,
    });
  }
  expect(JSON.parse(main.attributes.RedrivePolicy!)).toEqual({
    deadLetterTargetArn: queues[0]!.arn,
    maxReceiveCount: main.maxReceiveCount,
  });
  expect(queues.map((q) => Number(q.attributes.MessageRetentionPeriod))).toEqual([
    declared.CallbackFifoDeadLetterQueue.Properties.MessageRetentionPeriod,
    declared.CallbackFifoQueue.Properties.MessageRetentionPeriod,
  ]);
});

test('the verify queues carry the settings of infra/verifier.yml: standard queues, the dead-letter queue first', () => {
  const declared = yaml('infra/verifier.yml').Resources;
  const queues = settings.queues.filter((q) => q.logicalId.startsWith('Verify'));
  expect(queues.map((q) => [q.logicalId, q.fifo])).toEqual([
    ['VerifyDeadLetterQueue', false],
    ['VerifyQueue', false],
  ]);
  const main = queues[1]!;
  expect(main.visibilityTimeoutS).toBe(declared.VerifyQueue.Properties.VisibilityTimeout);
  expect(JSON.parse(main.attributes.RedrivePolicy!)).toEqual({
    deadLetterTargetArn: queues[0]!.arn,
    maxReceiveCount: declared.VerifyQueue.Properties.RedrivePolicy.maxReceiveCount,
  });
});

test('the names the CLI uses for a stage are those of the template', () => {
  const names = resourceNames(LOCAL_STAGE);
  expect(settings.table.name).toBe(names.table);
  expect(settings.queues.filter((q) => q.fifo).map((q) => q.name)).toEqual([names.deadLetterQueue, names.queue]);
  expect(settings.topics.map((t) => t.name)).toContain(names.eventsTopic);
  expect(settings.functions.map((f) => f.functionName).sort()).toEqual(
    ['api', 'ingest', 'sweeper', 'verifier', 'worker'].map((key) => `${SERVICE}-${LOCAL_STAGE}-${key}`),
  );
});

test('the routes and their authorization are those of the HTTP API events, $default to the ingest', () => {
  const byKey = Object.fromEntries(settings.routes.map((r) => [r.routeKey, [r.functionKey, r.authorization]]));
  expect(byKey).toEqual({
    $default: ['ingest', 'NONE'],
    'POST /callbacks/recording': ['ingest', 'NONE'],
    'POST /callbacks/screenshot': ['ingest', 'NONE'],
    'GET /tasks': ['api', 'AWS_IAM'],
    'GET /tasks/{id}': ['api', 'AWS_IAM'],
    'GET /tasks/{id}/events': ['api', 'AWS_IAM'],
  });
});

test('the table is created with the keys and indexes of infra/table.yml', () => {
  const declared = yaml('infra/table.yml').Resources.TasksTable.Properties;
  expect(settings.table.create.KeySchema).toEqual(declared.KeySchema);
  expect(settings.table.create.GlobalSecondaryIndexes).toEqual(declared.GlobalSecondaryIndexes);
  expect(settings.table.create.AttributeDefinitions).toEqual(declared.AttributeDefinitions);
});

test('the settings are read from the template given, nothing written beside it', () => {
  const { template } = loadTemplate();
  const changed = structuredClone(template);
  changed.Resources.CallbackFifoQueue!.Properties!.VisibilityTimeout = 42;
  changed.Resources.WorkerLambdaFunction!.Properties!.Timeout = 7;
  const read = localStageSettings(changed);
  expect(read.queues.find((q) => q.logicalId === 'CallbackFifoQueue')!.visibilityTimeoutS).toBe(42);
  expect(read.functions.find((f) => f.key === 'worker')!.timeoutS).toBe(7);
});
