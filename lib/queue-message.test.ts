import type { SQSRecord } from 'aws-lambda';
import { REPLAY_CLAIMS } from './domain/replay-claim.ts';
import {
  Attr,
  type CallbackMessage,
  isQueueSafe,
  MAX_USER_AGENT_CHARS,
  messageAttributes,
  readSender,
  senderOf,
  readRecord,
} from './queue-message.ts';
import { parseSignatureMode, SIGNATURE_MODES, SIGNATURE_VERDICTS } from './signature/verdicts.ts';

const message: CallbackMessage = {
  body: '{"type":1}',
  service: 'recording',
  appKey: 'demo-app',
  receivedAt: 1_763_798_400_123,
  requestId: 'req-1',
  verdict: 'valid',
  mode: 'enforce',
  replayKey: 'f'.repeat(64),
};

/** The record Lambda hands the worker for a message sent with these attributes. */
function delivered(
  attributes: Record<string, { DataType: string; StringValue: string }>,
  body = message.body,
): SQSRecord {
  return {
    messageId: 'm-1',
    receiptHandle: 'rh',
    body,
    attributes: {
      ApproximateReceiveCount: '2',
      SentTimestamp: '1763798400999',
      SenderId: 'x',
      ApproximateFirstReceiveTimestamp: '1763798401000',
    },
    messageAttributes: Object.fromEntries(
      Object.entries(attributes).map(([name, v]) => [
        name,
        { dataType: v.DataType, stringValue: v.StringValue, stringListValues: [], binaryListValues: [] },
      ]),
    ),
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:q',
    awsRegion: 'us-east-1',
  };
}

describe('messageAttributes', () => {
  test('one attribute per Attr name, receivedAt as a Number', () => {
    expect(messageAttributes(message)).toEqual({
      [Attr.service]: { DataType: 'String', StringValue: 'recording' },
      [Attr.appKey]: { DataType: 'String', StringValue: 'demo-app' },
      [Attr.receivedAt]: { DataType: 'Number', StringValue: '1763798400123' },
      [Attr.requestId]: { DataType: 'String', StringValue: 'req-1' },
      [Attr.verdict]: { DataType: 'String', StringValue: 'valid' },
      [Attr.mode]: { DataType: 'String', StringValue: 'enforce' },
      [Attr.replayKey]: { DataType: 'String', StringValue: 'f'.repeat(64) },
    });
  });

  test('absent request id and replay key are left out (SQS refuses empty values)', () => {
    const attributes = messageAttributes({ ...message, requestId: null, replayKey: null });
    expect(Object.keys(attributes).sort()).toEqual(
      [Attr.appKey, Attr.receivedAt, Attr.service, Attr.mode, Attr.verdict].sort(),
    );
  });
});

describe('the sender', () => {
  test('every attribute at once stays within the ten SQS takes, the sender one of them', () => {
    const attributes = messageAttributes({
      ...message,
      heldSignature: { nonce: 'n', timestamp: '1', signature: 's', appKey: 'a', from: { nonce: 'header' } },
      sender: { sourceIp: '2001:db8::7', userAgent: 'ua' },
      claim: 'stored',
    });
    // All but the mark of a message sent again, which only a redrive sets.
    expect(Object.keys(attributes).sort()).toEqual(
      Object.values(Attr)
        .filter((a) => a !== Attr.resentBy)
        .sort(),
    );
    expect(Object.keys(attributes).length).toBeLessThanOrEqual(10);
    expect(JSON.parse(attributes[Attr.sender]!.StringValue)).toEqual({ sourceIp: '2001:db8::7', userAgent: 'ua' });
  });

  test('what cannot be an address or cannot be queued is left out; a long user agent is cut', () => {
    expect(senderOf(' 203.0.113.7 ', undefined)).toEqual({ sourceIp: '203.0.113.7' });
    expect(senderOf(undefined, '')).toBeNull();
    expect(senderOf('x'.repeat(65), 'a\u0000b')).toBeNull();
    expect(senderOf(undefined, 'u'.repeat(300))).toEqual({ userAgent: `${'u'.repeat(MAX_USER_AGENT_CHARS)}…` });
    expect(readSender('{"sourceIp":7,"userAgent":"ua"}')).toEqual({ userAgent: 'ua' });
    expect(readSender('not json')).toBeNull();
  });
});

describe('isQueueSafe', () => {
  test.each(['{"a":"b"}', 'tab\tnew\nline\r', 'é 日本 😀', '\uE000\uFFFD'])('%j can be queued', (text) => {
    expect(isQueueSafe(text)).toBe(true);
  });
  test.each(['\u0000', 'a\u0001b', '\u001f', '\uFFFE', '\uFFFF', '\uD800', 'x\uDC00'])('%j cannot', (text) => {
    expect(isQueueSafe(text)).toBe(false);
  });
});

describe('readRecord', () => {
  test('reads back what messageAttributes wrote, for every mode and verdict', () => {
    for (const mode of SIGNATURE_MODES) {
      for (const verdict of SIGNATURE_VERDICTS) {
        // The signature values travel only with a verdict other than valid.
        const heldSignature =
          verdict === 'valid'
            ? null
            : { nonce: 'n-1', timestamp: '1763798400', signature: 'AB12', from: { nonce: 'header' as const } };
        const sender = { sourceIp: '203.0.113.7', userAgent: 'platform-callback/2.1' };
        // The ingest's replay claim, on a callback it claimed; none on any other.
        for (const claim of [null, ...REPLAY_CLAIMS]) {
          const written = { ...message, mode, verdict, heldSignature, sender, claim };
          expect(readRecord(delivered(messageAttributes(written)))).toEqual({
            ok: true,
            message: { ...written, messageId: 'm-1', receiveCount: 2, resent: false },
          });
        }
      }
    }
  });

  test('without a known service the record cannot be read', () => {
    const { [Attr.service]: _dropped, ...rest } = messageAttributes(message);
    expect(readRecord(delivered(rest))).toEqual({
      ok: false,
      reason: 'message attribute service is missing or unknown',
    });
    const other = { ...rest, [Attr.service]: { DataType: 'String', StringValue: 'video' } };
    expect(readRecord(delivered(other)).ok).toBe(false);
  });

  test('other attributes missing or unknown get the value that trusts the message least', () => {
    const read = readRecord(
      delivered({
        [Attr.service]: { DataType: 'String', StringValue: 'screenshot' },
        [Attr.verdict]: { DataType: 'String', StringValue: 'trusted' },
        [Attr.mode]: { DataType: 'String', StringValue: 'lenient' },
        [Attr.claim]: { DataType: 'String', StringValue: 'kept' },
      }),
    );
    expect(read).toEqual({
      ok: true,
      message: {
        messageId: 'm-1',
        body: message.body,
        service: 'screenshot',
        appKey: '',
        receivedAt: 1763798400999,
        requestId: null,
        verdict: 'unverified',
        mode: 'enforce',
        replayKey: null,
        heldSignature: null,
        sender: null,
        // Unknown: the worker claims the signature itself.
        claim: null,
        receiveCount: 2,
        resent: false,
      },
    });
  });
});

describe('parseSignatureMode', () => {
  test('each mode, in any case and with spaces around; anything else is none', () => {
    expect([' Report ', 'ENFORCE', 'off'].map(parseSignatureMode)).toEqual(['report', 'enforce', 'off']);
    expect(['', 'strict', undefined].map(parseSignatureMode)).toEqual([undefined, undefined, undefined]);
  });
});
