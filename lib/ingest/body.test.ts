import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import { decodeBody } from './body.ts';

const b64 = (text: string | Buffer) => Buffer.from(text).toString('base64');

describe('decodeBody', () => {
  test('plain text body: raw kept, JSON parsed, bytes counted in UTF-8', () => {
    const raw = '{"appKey":"é","type":1}';
    expect(decodeBody(raw, false, 1000)).toEqual({ ok: true, raw, json: { appKey: 'é', type: 1 }, bytes: 24 });
  });

  test('base64 body decodes to the same text', () => {
    const raw = '{ "type": 1,\n  "appKey": "日本" }';
    const result = decodeBody(b64(raw), true, 1000);
    expect(result).toMatchObject({ ok: true, raw, json: { type: 1, appKey: '日本' } });
  });

  test('any JSON text survives base64 byte for byte', () => {
    fc.assert(
      fc.property(fc.json(), (raw) => {
        const result = decodeBody(b64(raw), true, 1 << 20);
        expect(result.ok && result.raw).toBe(raw);
      }),
      { numRuns: 200 },
    );
  });

  test('the limit counts decoded bytes: exactly at the limit passes, one more is 413', () => {
    const fill = (n: number) => `{"a":"${'x'.repeat(n - 8)}"}`;
    expect(Buffer.byteLength(fill(100))).toBe(100);
    expect(decodeBody(fill(100), false, 100).ok).toBe(true);
    expect(decodeBody(fill(101), false, 100)).toMatchObject({ ok: false, code: 'body_too_large' });
    expect(decodeBody(b64(fill(100)), true, 100).ok).toBe(true);
    expect(decodeBody(b64(fill(101)), true, 100)).toMatchObject({ ok: false, code: 'body_too_large' });
  });

  test('multi-byte characters count as bytes, not characters', () => {
    const raw = `{"a":"${'é'.repeat(50)}"}`; // 50 characters, 100 bytes
    expect(decodeBody(raw, false, 99)).toMatchObject({
      ok: false,
      code: 'body_too_large',
      message: expect.stringContaining('99 bytes'),
    });
  });

  test.each([
    ['not JSON', 'type=1&appKey=x'],
    ['truncated JSON', '{"type":1'],
    ['empty', ''],
    ['blank', '  \n'],
  ])('%s is invalid_json', (_name, raw) => {
    expect(decodeBody(raw, false, 1000)).toMatchObject({ ok: false, code: 'invalid_json' });
  });

  test('a missing body is invalid_json', () => {
    expect(decodeBody(undefined, false, 1000)).toMatchObject({ ok: false, code: 'invalid_json' });
  });

  test('invalid UTF-8 after base64 decoding is invalid_json', () => {
    const bytes = Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    expect(decodeBody(bytes.toString('base64'), true, 1000)).toMatchObject({
      ok: false,
      code: 'invalid_json',
      message: expect.stringMatching(/UTF-8/),
    });
  });

  test('the error message does not quote the body', () => {
    const result = decodeBody('{"secretish": nope}', false, 1000);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).not.toContain('nope');
  });

  test('JSON values that are not objects still parse (the minimal check rejects them)', () => {
    expect(decodeBody('[1,2]', false, 1000)).toMatchObject({ ok: true, json: [1, 2] });
  });
});
