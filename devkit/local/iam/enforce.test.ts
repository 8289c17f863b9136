import { DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { IamSession, enforceIam, requestedAccess, setIamSession } from './enforce.ts';

const ctx = { region: 'us-east-1', accountId: '000000000000' };
const table = 'arn:aws:dynamodb:us-east-1:000000000000:table/tasks';

test('each call maps to the action IAM authorises and the ARN of what it names', () => {
  expect(requestedAccess(ctx, 'DynamoDBClient', 'QueryCommand', { TableName: 'tasks', IndexName: 'byDay' })).toEqual([
    { action: 'dynamodb:Query', resource: `${table}/index/byDay` },
  ]);
  expect(
    requestedAccess(ctx, 'DynamoDBClient', 'BatchGetItemCommand', { RequestItems: { tasks: {}, other: {} } }),
  ).toEqual([
    { action: 'dynamodb:BatchGetItem', resource: table },
    { action: 'dynamodb:BatchGetItem', resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/other' },
  ]);
  expect(
    requestedAccess(ctx, 'SQSClient', 'DeleteMessageBatchCommand', {
      QueueUrl: 'http://127.0.0.1:4566/000000000000/callbacks',
    }),
  ).toEqual([{ action: 'sqs:DeleteMessage', resource: 'arn:aws:sqs:us-east-1:000000000000:callbacks' }]);
  expect(requestedAccess(ctx, 'SNSClient', 'PublishBatchCommand', { TopicArn: 'arn:aws:sns:x:y:events' })).toEqual([
    { action: 'sns:Publish', resource: 'arn:aws:sns:x:y:events' },
  ]);
  // An unsubscribe is authorised on the topic the subscription belongs to.
  expect(
    requestedAccess(ctx, 'SNSClient', 'UnsubscribeCommand', { SubscriptionArn: 'arn:aws:sns:x:y:events:4f1c-9a' }),
  ).toEqual([{ action: 'sns:Unsubscribe', resource: 'arn:aws:sns:x:y:events' }]);
  expect(requestedAccess(ctx, 'SSMClient', 'GetParameterCommand', { Name: '/svc/secrets' })).toEqual([
    { action: 'ssm:GetParameter', resource: 'arn:aws:ssm:us-east-1:000000000000:parameter/svc/secrets' },
  ]);
  // The archive's stream, named in the request, is authorised by its ARN.
  expect(
    requestedAccess(ctx, 'FirehoseClient', 'PutRecordBatchCommand', { DeliveryStreamName: 'svc-local-archive' }),
  ).toEqual([
    {
      action: 'firehose:PutRecordBatch',
      resource: 'arn:aws:firehose:us-east-1:000000000000:deliverystream/svc-local-archive',
    },
  ]);
});

test('a refused call never leaves the client: AccessDeniedException with the principal and the resource', async () => {
  // Nothing listens on this port: a call that got through would fail with a connection error instead.
  const client = new DynamoDBClient({
    endpoint: 'http://127.0.0.1:9',
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    maxAttempts: 1,
  });
  enforceIam(client, 'worker');
  const session = new IamSession(ctx);
  session.setPrincipal('worker', {
    roleName: 'WorkerRole',
    sessionName: 'fn-worker',
    statements: [{ statement: { Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: table }, source: 'test' }],
  });
  const previous = setIamSession(session);
  try {
    const refused = client.send(new QueryCommand({ TableName: 'tasks', KeyConditionExpression: 'pk = :p' }));
    await expect(refused).rejects.toMatchObject({
      name: 'AccessDeniedException',
      message:
        'User: arn:aws:sts::000000000000:assumed-role/WorkerRole/fn-worker is not authorized to perform: ' +
        `dynamodb:Query on resource: ${table} because no identity-based policy allows the dynamodb:Query action`,
    });
    expect(session.denials.map((d) => d.action)).toEqual(['dynamodb:Query']);
    // Without a session in force the same call goes through to the (absent) endpoint.
    setIamSession(undefined);
    await expect(
      client.send(new QueryCommand({ TableName: 'tasks', KeyConditionExpression: 'pk = :p' })),
    ).rejects.not.toMatchObject({ name: 'AccessDeniedException' });
  } finally {
    setIamSession(previous);
    client.destroy();
  }
});
