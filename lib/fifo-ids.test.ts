import fc from 'fast-check';
import {
  callbackDeduplicationId,
  ownGroupId,
  redriveDeduplicationId,
  taskGroupId,
  type SignatureParts,
} from './fifo-ids.ts';

/** What SQS takes as a MessageGroupId or MessageDeduplicationId: 1 to 128 of these characters. */
const sqsIdPattern = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;

const signatureParts: fc.Arbitrary<SignatureParts> = fc.record(
  { nonce: fc.string(), timestamp: fc.string(), signature: fc.string(), appKey: fc.string() },
  { requiredKeys: [] },
);

test('the group of a task is a valid SQS id whatever its appKey and id hold, even 10,000 characters', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (appKey, id) => {
      expect(taskGroupId(appKey, id)).toMatch(sqsIdPattern);
    }),
  );
  expect(taskGroupId('a'.repeat(10_000), 'b'.repeat(10_000))).toMatch(sqsIdPattern);
  expect(ownGroupId('c'.repeat(10_000))).toMatch(sqsIdPattern);
});

test('different appKeys or task ids never share a group, whatever separators the names hold', () => {
  fc.assert(
    fc.property(fc.string(), fc.string(), fc.string(), fc.string(), (appKeyA, idA, appKeyB, idB) => {
      fc.pre(appKeyA !== appKeyB || idA !== idB);
      expect(taskGroupId(appKeyA, idA)).not.toBe(taskGroupId(appKeyB, idB));
    }),
  );
  // Joining with a separator would make these two meet.
  expect(taskGroupId('a:b', 'c')).not.toBe(taskGroupId('a', 'b:c'));
  expect(taskGroupId('a","b', 'c')).not.toBe(taskGroupId('a', 'b","c'));
});

test("a message's own group never equals a task's group", () => {
  fc.assert(
    fc.property(fc.string(), fc.string(), fc.string(), (appKey, id, key) => {
      expect(ownGroupId(key)).not.toBe(taskGroupId(appKey, id));
    }),
  );
  // The parts a task's group hashes, handed over as a message key, still give another group.
  expect(ownGroupId('["task","app","1"]')).not.toBe(taskGroupId('app', '1'));
});

test('different raw bodies, routes or signatures never share a deduplication id', () => {
  fc.assert(
    fc.property(
      fc.constantFrom('recording', 'screenshot'),
      signatureParts,
      fc.string({ unit: 'grapheme' }),
      fc.constantFrom('recording', 'screenshot'),
      signatureParts,
      fc.string({ unit: 'grapheme' }),
      (routeA, sigA, bodyA, routeB, sigB, bodyB) => {
        const same =
          routeA === routeB &&
          bodyA === bodyB &&
          (sigA.nonce ?? '') === (sigB.nonce ?? '') &&
          (sigA.timestamp ?? '') === (sigB.timestamp ?? '') &&
          (sigA.signature ?? '') === (sigB.signature ?? '') &&
          (sigA.appKey ?? '') === (sigB.appKey ?? '');
        fc.pre(!same);
        const a = callbackDeduplicationId(routeA, sigA, bodyA);
        expect(a).toMatch(sqsIdPattern);
        expect(a).not.toBe(callbackDeduplicationId(routeB, sigB, bodyB));
      },
    ),
  );
});

test('bodies that differ in one byte only, or in white space, get different deduplication ids', () => {
  const signed = { nonce: 'n', timestamp: '1763798400', signature: 'ab'.repeat(20) };
  const body = '{"appKey":"app","recordId":"r1","type":1}';
  expect(callbackDeduplicationId('recording', signed, body)).not.toBe(
    callbackDeduplicationId('recording', signed, body.replace('r1', 'r2')),
  );
  expect(callbackDeduplicationId('recording', signed, body)).not.toBe(
    callbackDeduplicationId('recording', signed, `${body} `),
  );
});

test('the same body delivered twice with different signatures gets two deduplication ids', () => {
  const body = '{"appKey":"app","recordId":"r1","type":1}';
  const first = { nonce: 'n1', timestamp: '1763798400', signature: 'a'.repeat(40) };
  expect(callbackDeduplicationId('recording', first, body)).not.toBe(
    callbackDeduplicationId('recording', { ...first, nonce: 'n2', signature: 'b'.repeat(40) }, body),
  );
  expect(callbackDeduplicationId('recording', first, body)).not.toBe(
    callbackDeduplicationId('recording', { ...first, timestamp: '1763798401' }, body),
  );
  // A value moved into another field is another request.
  expect(callbackDeduplicationId('recording', { nonce: 'x' }, body)).not.toBe(
    callbackDeduplicationId('recording', { timestamp: 'x' }, body),
  );
});

test('one delivery resent as it was keeps its deduplication id: SQS drops the copy within five minutes', () => {
  const body = '{"appKey":"app","recordId":"r1","type":1}';
  const signature = { nonce: 'n1', timestamp: '1763798400', signature: 'a'.repeat(40) };
  expect(callbackDeduplicationId('recording', signature, body)).toBe(
    callbackDeduplicationId('recording', { ...signature }, body),
  );
});

test('a redrive deduplication id is one per dead letter, and never a callback deduplication id', () => {
  fc.assert(
    fc.property(fc.uuid(), fc.uuid(), (a, b) => {
      fc.pre(a !== b);
      expect(redriveDeduplicationId(a)).toMatch(sqsIdPattern);
      expect(redriveDeduplicationId(a)).toBe(redriveDeduplicationId(a));
      expect(redriveDeduplicationId(a)).not.toBe(redriveDeduplicationId(b));
    }),
  );
  expect(redriveDeduplicationId('m')).not.toBe(callbackDeduplicationId('m', {}, ''));
});
