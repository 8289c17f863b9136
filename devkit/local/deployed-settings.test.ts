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

test('the event source mapping is the worker sqs event of serverless.yml', () => {
  const sls = yaml('serverless.yml');
  const event = sls.functions.worker.events[0].sqs;
  expect(settings.mappings).toEqual([
    {
      queue: 'CallbackFifoQueue',
      functionKey: 'worker',
      batchSize: event.batchSize,
      // A FIFO queue's mapping has no batching window.
      batchingWindowS: event.maximumBatchingWindow ?? 0,
      reportBatchItemFailures: event.functionResponseType === 'ReportBatchItemFailures',
      maximumConcurrency: event.maximumConcurrency,
    },
  ]);
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

test('the queues carry the settings of infra/queues.yml, the dead-letter queue first, both FIFO', () => {
  const declared = yaml('infra/queues.yml').Resources;
  expect(settings.queues.map((q) => q.logicalId)).toEqual(['CallbackFifoDeadLetterQueue', 'CallbackFifoQueue']);
  const main = settings.queues[1]!;
  expect(main.visibilityTimeoutS).toBe(declared.CallbackFifoQueue.Properties.VisibilityTimeout);
  expect(main.maxReceiveCount).toBe(declared.CallbackFifoQueue.Properties.RedrivePolicy.maxReceiveCount);
  expect(main.deadLetterQueue).toBe('CallbackFifoDeadLetterQueue');
  for (const queue of settings.queues) {
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
    deadLetterTargetArn: settings.queues[0]!.arn,
    maxReceiveCount: main.maxReceiveCount,
  });
  expect(settings.queues.map((q) => Number(q.attributes.MessageRetentionPeriod))).toEqual([
    declared.CallbackFifoDeadLetterQueue.Properties.MessageRetentionPeriod,
    declared.CallbackFifoQueue.Properties.MessageRetentionPeriod,
  ]);
});

test('the names the CLI uses for a stage are those of the template', () => {
  const names = resourceNames(LOCAL_STAGE);
  expect(settings.table.name).toBe(names.table);
  expect(settings.queues.map((q) => q.name)).toEqual([names.deadLetterQueue, names.queue]);
  expect(settings.topics.map((t) => t.name)).toContain(names.eventsTopic);
  expect(settings.functions.map((f) => f.functionName).sort()).toEqual(
    ['api', 'ingest', 'sweeper', 'worker'].map((key) => `${SERVICE}-${LOCAL_STAGE}-${key}`),
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
