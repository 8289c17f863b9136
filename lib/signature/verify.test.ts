import fc from 'fast-check';
import { computeSignature } from '../platform/signing.ts';
import type { SignatureMode } from './verdicts.ts';
import { createHash } from 'node:crypto';
import { heldSignatureOf, readSignatureValues, replayKeyOf, timestampToMs, verifySignature } from './verify.ts';
import type { SignatureValues } from './verify.ts';

const nowMs = 1_763_798_400_000;
const secret = 'old-secret';

function signed(overrides: Partial<SignatureValues> = {}, key = secret): SignatureValues {
  const nonce = overrides.nonce ?? 'n0nce';
  const timestamp = overrides.timestamp ?? String(nowMs);
  return { nonce, timestamp, signature: computeSignature(key, nonce, timestamp), ...overrides };
}

const verify = (
  values: SignatureValues,
  extra: { mode?: SignatureMode; secrets?: string[] | undefined; appKey?: string } = {},
) =>
  verifySignature({
    mode: extra.mode ?? 'enforce',
    appKey: extra.appKey ?? 'demo-app',
    values,
    secrets: 'secrets' in extra ? extra.secrets : [secret],
    nowMs,
    toleranceS: 300,
  });

describe('readSignatureValues', () => {
  test.each([
    ['nonce', 'nonce'],
    ['RC-Nonce', 'nonce'],
    ['rc-nonce', 'nonce'],
    ['NONCE', 'nonce'],
    ['timestamp', 'timestamp'],
    ['signTimestamp', 'timestamp'],
    ['SIGNTIMESTAMP', 'timestamp'],
    ['RC-Timestamp', 'timestamp'],
    ['signature', 'signature'],
    ['RC-Signature', 'signature'],
    ['Rc-SiGnAtUrE', 'signature'],
    ['appKey', 'appKey'],
    ['RC-App-Key', 'appKey'],
    ['APPKEY', 'appKey'],
  ] as const)('%s is read as %s from a header and from the query string', (name, field) => {
    expect(readSignatureValues({ [name]: 'v1' }, '')).toEqual({ [field]: 'v1', from: { [field]: 'header' } });
    expect(readSignatureValues({}, `${encodeURIComponent(name)}=v2`)).toEqual({
      [field]: 'v2',
      from: { [field]: 'query' },
    });
    expect(readSignatureValues({}, '', { [name]: 'v3' })).toEqual({ [field]: 'v3', from: { [field]: 'query' } });
  });

  test('the query string wins over headers, and values are decoded and trimmed', () => {
    expect(readSignatureValues({ nonce: 'from-header', 'rc-signature': 'sig-h' }, 'RC-Nonce=from%20query&x=1')).toEqual(
      { nonce: 'from query', signature: 'sig-h', from: { nonce: 'query', signature: 'header' } },
    );
  });

  test('empty values count as absent', () => {
    expect(readSignatureValues({ nonce: '' }, 'signature=&timestamp=%20')).toEqual({});
  });

  test('the raw query string is preferred to the parsed map', () => {
    expect(readSignatureValues({}, 'nonce=a', { nonce: 'a,b' })).toEqual({ nonce: 'a', from: { nonce: 'query' } });
  });
});

describe('heldSignatureOf', () => {
  test('the values as received and where each came from; nothing when none was sent', () => {
    const values = readSignatureValues({ 'rc-signature': 'abc', 'rc-app-key': 'k' }, 'nonce=n&timestamp=1763798400');
    expect(heldSignatureOf(values)).toEqual({
      nonce: 'n',
      timestamp: '1763798400',
      signature: 'abc',
      appKey: 'k',
      from: { nonce: 'query', timestamp: 'query', signature: 'header', appKey: 'header' },
    });
    expect(heldSignatureOf(readSignatureValues({}, ''))).toBeNull();
  });

  test('values kilobytes long are not kept', () => {
    expect(heldSignatureOf(readSignatureValues({ nonce: 'x'.repeat(4000) }, ''))).toBeNull();
  });
});

describe('timestampToMs', () => {
  test('seconds and milliseconds are told apart by magnitude', () => {
    expect(timestampToMs('1763798400')).toBe(1_763_798_400_000);
    expect(timestampToMs('1763798400123')).toBe(1_763_798_400_123);
  });
  test.each(['', 'abc', '-5', '1.5', '1e12', '12345678901234567'])('%p is not a timestamp', (value) => {
    expect(timestampToMs(value)).toBeUndefined();
  });
});

describe('replayKeyOf', () => {
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  const sig = 'a94a8fe5ccb19ba61c4c0873d391e987982fbbd3';

  test('present only when nonce, timestamp and signature all are', () => {
    expect(replayKeyOf({ nonce: 'n', timestamp: '1', signature: sig })).toMatch(/^[0-9a-f]{64}$/);
    expect(replayKeyOf({ nonce: 'n', timestamp: '1' })).toBeNull();
    expect(replayKeyOf({ nonce: ' ', timestamp: '1', signature: sig })).toBeNull();
  });

  test('the SHA-256 of the signature, lower-cased: never the signature itself', () => {
    const key = replayKeyOf({ nonce: 'n', timestamp: '1', signature: sig.toUpperCase() })!;
    expect(key).toBe(sha256(JSON.stringify([sig])));
    expect(key).not.toContain(sig);
  });

  test('one key for every spelling the check accepts: signature case, surrounding spaces', () => {
    const keys = new Set(
      [
        { nonce: 'n', timestamp: '1', signature: sig },
        { nonce: 'n', timestamp: '1', signature: sig.toUpperCase() },
        { nonce: ' n\t', timestamp: ' 1 ', signature: ` ${sig.slice(0, 20).toUpperCase()}${sig.slice(20)} ` },
      ].map(replayKeyOf),
    );
    expect(keys.size).toBe(1);
  });

  test('another signature, another key', () => {
    const keys = [sig, sig.replace('a', 'b'), sig.slice(1)].map((signature) =>
      replayKeyOf({ nonce: 'n', timestamp: '1', signature }),
    );
    expect(new Set(keys).size).toBe(keys.length);
  });

  test("replay key bypass: a nonce's trailing 0 moved to the front of the timestamp keeps the key", () => {
    const genuine = signed({ nonce: 'nonce-10' });
    const resplit = { ...genuine, nonce: 'nonce-1', timestamp: `0${genuine.timestamp}` };
    expect(computeSignature(secret, resplit.nonce, resplit.timestamp)).toBe(genuine.signature);
    expect(replayKeyOf(resplit)).toBe(replayKeyOf(genuine));
  });

  test(
    'replay key bypass: a millisecond timestamp whose first digits go to the nonce verifies, read as seconds, ' +
      'and keeps the key',
    () => {
      // At 1771771771771 ms, "177" + "1771771771" s is 771 ms away: the same signature verifies either way.
      const at = 1_771_771_771_771;
      const genuine = signed({ nonce: 'n-1', timestamp: String(at) });
      const resplit = { ...genuine, nonce: 'n-1177', timestamp: '1771771771' };
      const check = (values: SignatureValues) =>
        verifySignature({ mode: 'enforce', appKey: 'demo-app', values, secrets: [secret], nowMs: at, toleranceS: 300 });
      expect([check(genuine), check(resplit)]).toEqual(['valid', 'valid']);
      expect(replayKeyOf(resplit)).toBe(replayKeyOf(genuine));
    },
  );
});

describe('verifySignature', () => {
  test('valid with a timestamp in milliseconds or in seconds', () => {
    expect(verify(signed())).toBe('valid');
    expect(verify(signed({ timestamp: String(nowMs / 1000) }))).toBe('valid');
  });

  test('an upper-case hex signature is accepted', () => {
    const values = signed();
    expect(verify({ ...values, signature: values.signature!.toUpperCase() })).toBe('valid');
  });

  test('inside the window either way is valid; outside is stale (past and future)', () => {
    expect(verify(signed({ timestamp: String(nowMs - 300_000) }))).toBe('valid');
    expect(verify(signed({ timestamp: String(nowMs + 300_000) }))).toBe('valid');
    expect(verify(signed({ timestamp: String(nowMs - 300_001) }))).toBe('stale');
    expect(verify(signed({ timestamp: String(nowMs + 300_001) }))).toBe('stale');
    expect(verify(signed({ timestamp: String(nowMs / 1000 - 301) }))).toBe('stale');
  });

  test('replay key bypass: a timestamp with a leading zero is invalid, even where the signature matches', () => {
    const genuine = signed({ nonce: 'nonce-10' });
    expect(verify(genuine)).toBe('valid');
    expect(verify({ ...genuine, nonce: 'nonce-1', timestamp: `0${genuine.timestamp}` })).toBe('invalid');
    expect(verify(signed({ timestamp: `00${nowMs / 1000}` }))).toBe('invalid');
    expect(verify(signed({ timestamp: '0' }))).toBe('stale');
  });

  test('a matching signature over an unreadable timestamp is stale', () => {
    expect(verify(signed({ timestamp: 'yesterday' }))).toBe('stale');
  });

  test('a stale timestamp with a wrong signature is invalid, not stale', () => {
    expect(verify(signed({ timestamp: String(nowMs - 3_600_000) }, 'wrong'))).toBe('invalid');
  });

  test('a wrong secret, a tampered nonce or timestamp are invalid', () => {
    expect(verify(signed({}, 'wrong-secret'))).toBe('invalid');
    expect(verify({ ...signed(), nonce: 'other' })).toBe('invalid');
    expect(verify({ ...signed(), timestamp: String(nowMs + 1) })).toBe('invalid');
    expect(verify({ ...signed(), signature: 'é'.repeat(20) })).toBe('invalid');
    expect(verify({ ...signed(), signature: 'abc' })).toBe('invalid');
  });

  test('any of several secrets matches (rotation)', () => {
    expect(verify(signed({}, 'new-secret'), { secrets: ['old-secret', 'new-secret'] })).toBe('valid');
    expect(verify(signed({}, 'old-secret'), { secrets: ['old-secret', 'new-secret'] })).toBe('valid');
    expect(verify(signed({}, 'old-secret'), { secrets: ['new-secret'] })).toBe('invalid');
  });

  test('missing when nonce, timestamp or signature is absent', () => {
    for (const field of ['nonce', 'timestamp', 'signature'] as const) {
      const values = signed();
      delete values[field];
      expect(verify(values)).toBe('missing');
    }
    expect(verify({})).toBe('missing');
  });

  test('unknown appKey when no secret is configured for it, signed or not', () => {
    expect(verify(signed(), { secrets: undefined })).toBe('unknown_app_key');
    expect(verify({}, { secrets: [] })).toBe('unknown_app_key');
  });

  test('an outside appKey that differs from the body is invalid; an equal one is fine', () => {
    expect(verify({ ...signed(), appKey: 'other-app' })).toBe('invalid');
    expect(verify({ ...signed(), appKey: 'demo-app' })).toBe('valid');
  });

  test('mode off checks nothing; report judges like enforce', () => {
    expect(verify({}, { mode: 'off' })).toBe('not_checked');
    expect(verify(signed({}, 'wrong'), { mode: 'report' })).toBe('invalid');
    expect(verify(signed(), { mode: 'report' })).toBe('valid');
  });

  test('whatever the secrets and nonce, the platform rule verifies and a one-character change does not', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.string({ minLength: 1 }),
        fc.integer({ min: -300, max: 300 }),
        (key, nonce, skewS) => {
          const values = signed({ nonce, timestamp: String(nowMs / 1000 + skewS) }, key);
          expect(verify(values, { secrets: [key] })).toBe('valid');
          const sig = values.signature!;
          const flipped = sig.slice(0, -1) + (sig.endsWith('0') ? '1' : '0');
          expect(verify({ ...values, signature: flipped }, { secrets: [key] })).toBe('invalid');
        },
      ),
      { numRuns: 200 },
    );
  });
});
