// Cold-start baseline: the least a Lambda that reads one task over HTTP can be (one DynamoDB GetItem),
// bundled with the same esbuild settings as the real functions.
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';

const dynamo = new DynamoDBClient({});

export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyResultV2> {
  const res = await dynamo.send(
    new GetItemCommand({
      TableName: process.env.TASKS_TABLE,
      Key: { pk: { S: `TASK#${event.pathParameters?.id}` }, sk: { S: '#' } },
    }),
  );
  return { statusCode: res.Item ? 200 : 404, body: JSON.stringify(res.Item ?? null) };
}
