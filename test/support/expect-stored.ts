// The oracle of the worker's tests, once: a task as stored equals the contract's fold of its callbacks
// (reduceTask), and its header's counts equal its files.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { countsOf } from '../../lib/aws/dynamo/table/items.ts';
import { TaskQueries } from '../../lib/aws/dynamo/read/queries.ts';
import { TableReader } from '../../lib/aws/dynamo/table/table-client.ts';
import { DynamoTaskStore } from '../../lib/aws/dynamo/read/task-store.ts';
import { reduceTask } from '../../lib/domain/reduce-task.ts';
import type { Service } from '../../lib/platform/services.ts';
import { mustParse } from './lifecycles.ts';

export async function expectStoredTask(
  db: { client: DynamoDBClient; tableName: string },
  service: Service,
  id: string,
  bodies: readonly object[],
): Promise<void> {
  const expected = reduceTask(bodies.map((b) => mustParse(service, b)));
  const store = new DynamoTaskStore({ client: db.client, tableName: db.tableName });
  expect(await store.getTask(id)).toEqual(expected);
  const header = (await new TaskQueries(new TableReader(db.client, db.tableName), Date.now).findHeader(id))!;
  expect(countsOf(header)).toEqual({
    files: expected!.files.length,
    pending: expected!.files.filter((f) => f.upload === 'pending').length,
    uploaded: expected!.files.filter((f) => f.upload === 'uploaded').length,
    failed: expected!.files.filter((f) => f.upload === 'failed').length,
    events: expected!.eventCount,
  });
}
