// Cold-start baseline: the least a Lambda that enqueues an HTTP body can be (one SQS SendMessage),
// bundled with the same esbuild settings as the real functions.
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';

const sqs = new SQSClient({});

export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyResultV2> {
  await sqs.send(new SendMessageCommand({ QueueUrl: process.env.QUEUE_URL, MessageBody: event.body ?? '' }));
  return { statusCode: 200, body: '{"ok":true}' };
}
