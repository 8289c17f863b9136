// A DynamoDB client whose Nth write fails: before it reaches the table (the write is lost) or after
// (the write is done but the caller sees an error, as with a time-out or a crash). Emulators cannot
// produce these faults on demand, so this wraps the real client rather than replacing it.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

const WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'BatchWriteItemCommand']);

export interface FaultPlan {
  /** 1-based index of the write to fail; 0 never. */
  failWrite: number;
  when: 'before' | 'after';
}

export function faultyClient(
  client: DynamoDBClient,
  plan: FaultPlan,
): { client: DynamoDBClient; writes(): number; fired(): boolean } {
  let writes = 0;
  let fired = false;
  const send = client.send.bind(client) as (command: any) => Promise<any>;
  const wrapped = new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return async (command: any) => {
        const isWrite = WRITES.has(command?.constructor?.name);
        if (!isWrite) return send(command);
        writes += 1;
        if (!fired && writes === plan.failWrite) {
          fired = true;
          if (plan.when === 'before')
            throw Object.assign(new Error('injected fault before write'), { name: 'InjectedFault' });
          await send(command).catch(() => undefined);
          throw Object.assign(new Error('injected fault after write'), { name: 'InjectedFault' });
        }
        return send(command);
      };
    },
  });
  return { client: wrapped, writes: () => writes, fired: () => fired };
}

/**
 * A worker process that dies at a write: the planned write fails as faultyClient makes it fail, and from then
 * on nothing the process sends arrives (`WorkerDied`), as when Lambda's sandbox is gone mid-batch.
 */
export function dyingClient(client: DynamoDBClient, plan: FaultPlan): { client: DynamoDBClient; died(): boolean } {
  const faulty = faultyClient(client, plan);
  const dead = new Proxy(faulty.client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      const send = Reflect.get(target, prop, receiver) as (c: unknown) => Promise<unknown>;
      return (command: unknown) =>
        faulty.fired()
          ? Promise.reject(Object.assign(new Error('the worker died'), { name: 'WorkerDied' }))
          : send(command);
    },
  });
  return { client: dead, died: () => faulty.fired() };
}

/**
 * A DynamoDB client whose first put of a file item is answered with a throttling error: refused (`landed: false`,
 * the put never reaches the table), or landed with its answer lost (`landed: true`).
 */
export function firstFilePutThrottled(
  client: DynamoDBClient,
  opts: { landed: boolean },
): { client: DynamoDBClient; fired(): boolean } {
  let fired = false;
  const send = client.send.bind(client) as (command: any) => Promise<any>;
  const wrapped = new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return async (command: { constructor: { name: string }; input: { Item?: any } }) => {
        const sk = String(command.input.Item?.sk?.S ?? '');
        if (!fired && command.constructor.name === 'PutItemCommand' && sk.includes('#F#')) {
          fired = true;
          if (opts.landed) await send(command);
          throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
            name: 'ProvisionedThroughputExceededException',
            $retryable: { throttling: true },
          });
        }
        return send(command);
      };
    },
  });
  return { client: wrapped, fired: () => fired };
}
