// The commands run against a local stack are held to the operators' policy of docs/cli-operations.md.
import { DeleteTableCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { PurgeQueueCommand } from '@aws-sdk/client-sqs';
import type { LocalStackInfo } from './stack-file.ts';
import { openLocal } from './target.ts';

// Nothing listens on port 9: a call that got past the policy fails with a connection error instead.
const info: LocalStackInfo = {
  pid: process.pid,
  url: 'http://127.0.0.1:9',
  dynamoEndpoint: 'http://127.0.0.1:9',
  sqsEndpoint: 'http://127.0.0.1:9',
  region: 'us-east-1',
  tableName: 'rtc-callbacks-receiver-local-tasks',
  queueUrl: 'http://127.0.0.1:9/000000000000/rtc-callbacks-receiver-local-callbacks',
  dlqUrl: 'http://127.0.0.1:9/000000000000/rtc-callbacks-receiver-local-callbacks-dlq',
  dataDir: null,
  startedAt: new Date(0).toISOString(),
};

test("a call the operators' policy does not allow is refused before it leaves; one it allows goes out", async () => {
  const target = openLocal(info);
  try {
    await expect(target.dynamo.send(new DeleteTableCommand({ TableName: info.tableName }))).rejects.toMatchObject({
      name: 'AccessDeniedException',
      message: expect.stringContaining(
        'assumed-role/operator/callbacks is not authorized to perform: dynamodb:DeleteTable',
      ),
    });
    await expect(target.sqs.send(new PurgeQueueCommand({ QueueUrl: info.dlqUrl }))).rejects.toMatchObject({
      name: 'AccessDeniedException',
    });
    await expect(
      target.dynamo.send(new GetItemCommand({ TableName: info.tableName, Key: { pk: { S: 'a' }, sk: { S: 'b' } } })),
    ).rejects.not.toMatchObject({ name: 'AccessDeniedException' });
  } finally {
    await target.close();
  }
});
