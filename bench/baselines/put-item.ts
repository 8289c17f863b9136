// Cold-start baseline: the least a Lambda that stores queued messages can be (one DynamoDB PutItem per
// record), bundled with the same esbuild settings as the real functions.
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { SQSEvent } from 'aws-lambda';

const dynamo = new DynamoDBClient({});

export async function handler(event: SQSEvent): Promise<void> {
  for (const record of event.Records) {
    await dynamo.send(
      new PutItemCommand({
        TableName: process.env.TASKS_TABLE,
        Item: { pk: { S: record.messageId }, sk: { S: '#' }, raw: { S: record.body } },
      }),
    );
  }
}
