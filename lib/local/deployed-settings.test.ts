// The local stack mirrors the deployed settings: this fails when serverless.yml or infra/ change without it.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SERVICE, eventSourceMapping, queueSettings, resourceNames } from './deployed-settings.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string) => readFileSync(`${root}/${path}`, 'utf8');

/** The single value of `key: <value>` in a YAML text (the files hold each of these keys once). */
function yamlValueOf(text: string, key: string): string {
  const matches = [...text.matchAll(new RegExp(`^\\s*${key}:\\s*([^#\\n]+?)\\s*(?:#.*)?$`, 'gm'))];
  expect(matches).toHaveLength(1);
  return matches[0]![1]!.replace(/^'(.*)'$/, '$1');
}

test('the event source mapping settings are those of the worker in serverless.yml', () => {
  const sls = read('serverless.yml');
  const worker = sls.slice(sls.indexOf('\n  worker:'));
  expect(/^service:\s*(\S+)/m.exec(sls)?.[1]).toBe(SERVICE);
  expect(Number(yamlValueOf(worker, 'batchSize'))).toBe(eventSourceMapping.batchSize);
  // A FIFO queue's mapping has no batching window.
  expect(worker).not.toMatch(/maximumBatchingWindow/);
  expect(eventSourceMapping.batchingWindowS).toBe(0);
  expect(Number(yamlValueOf(worker, 'maximumConcurrency'))).toBe(eventSourceMapping.maximumConcurrency);
  // The poller honours batchItemFailures only because the deployed mapping does.
  expect(yamlValueOf(worker, 'functionResponseType')).toBe('ReportBatchItemFailures');
});

test('the queue settings and names are those of infra/queues.yml and infra/table.yml', () => {
  const queues = read('infra/queues.yml');
  expect(Number(yamlValueOf(queues, 'VisibilityTimeout'))).toBe(queueSettings.visibilityTimeoutS);
  expect(Number(yamlValueOf(queues, 'maxReceiveCount'))).toBe(queueSettings.maxReceiveCount);
  const retention = [...queues.matchAll(/MessageRetentionPeriod:\s*(\d+)/g)].map((m) => Number(m[1]));
  expect(retention).toEqual([queueSettings.retentionS, queueSettings.deadLetterRetentionS]);

  const stage = 'STAGE';
  const names = resourceNames(stage);
  const deployedName = (template: string) =>
    template.replace('${self:service}', SERVICE).replace('${sls:stage}', stage);
  const queueNames = [...queues.matchAll(/QueueName:\s*(\S+)/g)].map((m) => deployedName(m[1]!));
  expect(queueNames).toEqual([names.queue, names.deadLetterQueue]);
  // Both queues have the FIFO settings the local stack gives them.
  const split = queues.indexOf('\n  CallbackFifoDeadLetterQueue:');
  for (const queue of [queues.slice(0, split), queues.slice(split)])
    for (const [name, value] of Object.entries(queueSettings.fifo)) expect(yamlValueOf(queue, name)).toBe(value);
  expect(deployedName(yamlValueOf(read('infra/table.yml'), 'TableName'))).toBe(names.table);
});
