import { PublishBatchCommand, SNSClient } from '@aws-sdk/client-sns';
import {
  SNS_MAX_MESSAGE_BYTES,
  SQS_MAX_MESSAGE_BYTES,
  enforceServiceLimits,
  limitViolation,
  messageBytes,
} from './service-limits.ts';

const attributes = { service: { DataType: 'String', StringValue: 'recording' } };

test("a message's size counts its body and each attribute's name, type and value", () => {
  expect(messageBytes('héllo', attributes)).toBe(6 + 'service'.length + 'String'.length + 'recording'.length);
  expect(messageBytes('', { b: { DataType: 'Binary', BinaryValue: new Uint8Array(5) } })).toBe(1 + 6 + 5);
});

test('SQS took 256 KiB: a message of 1 MiB goes now, one byte more is refused as SQS refuses it', () => {
  const fits = 'x'.repeat(SQS_MAX_MESSAGE_BYTES);
  expect(limitViolation('SQSClient', 'SendMessageCommand', { MessageBody: 'x'.repeat(262_145) })).toBeNull();
  expect(limitViolation('SQSClient', 'SendMessageCommand', { MessageBody: fits })).toBeNull();
  expect(limitViolation('SQSClient', 'SendMessageCommand', { MessageBody: `${fits}x` })).toEqual({
    name: 'InvalidParameterValue',
    message: 'One or more parameters are invalid. Reason: Message must be shorter than 1048576 bytes.',
  });
  const batchOf = (each: number) =>
    limitViolation('SQSClient', 'SendMessageBatchCommand', {
      Entries: Array.from({ length: 4 }, (_, i) => ({ Id: String(i), MessageBody: 'x'.repeat(each) })),
    });
  expect(batchOf(262_144)).toBeNull();
  expect(batchOf(262_145)?.name).toBe('BatchRequestTooLong');
  // The attributes count too.
  expect(
    limitViolation('SQSClient', 'SendMessageCommand', { MessageBody: fits, MessageAttributes: attributes }),
  ).not.toBeNull();
});

test('SNS: a message of 256 KiB, and PublishBatch: at most 10 entries, at most 256 KiB in all', () => {
  const message = (bytes: number) => limitViolation('SNSClient', 'PublishCommand', { Message: 'x'.repeat(bytes) });
  expect(message(SNS_MAX_MESSAGE_BYTES)).toBeNull();
  expect(message(SNS_MAX_MESSAGE_BYTES + 1)?.name).toBe('InvalidParameterException');
  const entry = (bytes: number) => ({ Id: 'i', Message: 'x'.repeat(bytes) });
  const publish = (entries: object[]) =>
    limitViolation('SNSClient', 'PublishBatchCommand', { PublishBatchRequestEntries: entries });
  expect(publish(Array.from({ length: 10 }, () => entry(26_000)))).toBeNull();
  expect(publish(Array.from({ length: 11 }, () => entry(1)))?.name).toBe('TooManyEntriesInBatchRequestException');
  expect(publish(Array.from({ length: 10 }, () => entry(26_215)))?.name).toBe('BatchRequestTooLongException');
});

test('a client with the limits refuses the call before it is sent', async () => {
  // Nothing listens on this port: a call that got through would fail with a connection error instead.
  const sns = new SNSClient({
    endpoint: 'http://127.0.0.1:9',
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    maxAttempts: 1,
  });
  enforceServiceLimits(sns);
  const entries = Array.from({ length: 11 }, (_, i) => ({ Id: String(i), Message: 'm' }));
  await expect(
    sns.send(
      new PublishBatchCommand({
        TopicArn: 'arn:aws:sns:us-east-1:000000000000:t',
        PublishBatchRequestEntries: entries,
      }),
    ),
  ).rejects.toMatchObject({ name: 'TooManyEntriesInBatchRequestException' });
  sns.destroy();
});
