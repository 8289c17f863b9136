import fc from 'fast-check';
import { canonicalJson, eventKey } from './canonical.ts';
import { reorderKeysDeep } from '../../test/support/lifecycles.ts';

describe('canonicalJson', () => {
  test('sorts keys at every depth, inside arrays too, and keeps array order', () => {
    const value = { b: 1, a: { d: [{ y: 1, x: 2 }, 3], c: null }, e: 'x' };
    expect(canonicalJson(value)).toBe('{"a":{"c":null,"d":[{"x":2,"y":1},3]},"b":1,"e":"x"}');
  });

  test('is valid JSON that parses back to the same value', () => {
    const value = { z: [1, 'two', { q: true, p: null }], 'key with "quotes"': 'line\nbreak', n: -1.5e-7 };
    expect(JSON.parse(canonicalJson(value))).toStrictEqual(value);
  });

  test('undefined properties are left out, as JSON.stringify does', () => {
    expect(canonicalJson({ a: 1, b: undefined })).toBe(canonicalJson({ a: 1 }));
  });
});

describe('eventKey', () => {
  const body = {
    timestamp: 1763798411000,
    type: 4,
    appKey: 'demo-app',
    imageId: 'img-1',
    output: { fileName: 'f.jpg', fileState: '10000', meta: { w: 640, h: 360, tags: [{ k: 'a', v: 1 }] } },
  };

  test('is 32 lowercase hex characters', () => {
    expect(eventKey(body)).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  test.each([
    ['top level', { output: body.output, imageId: 'img-1', type: 4, appKey: 'demo-app', timestamp: 1763798411000 }],
    ['depth 2', { ...body, output: { meta: body.output.meta, fileState: '10000', fileName: 'f.jpg' } }],
    ['depth 3', { ...body, output: { ...body.output, meta: { tags: body.output.meta.tags, h: 360, w: 640 } } }],
    [
      'inside an array',
      { ...body, output: { ...body.output, meta: { ...body.output.meta, tags: [{ v: 1, k: 'a' }] } } },
    ],
  ])('ignores key order (%s)', (_depth, reordered) => {
    expect(JSON.stringify(reordered)).not.toBe(JSON.stringify(body));
    expect(eventKey(reordered)).toBe(eventKey(body));
  });

  test.each([
    ['a top-level value', { ...body, timestamp: 1763798411001 }],
    ['a number sent as a string instead', { ...body, type: '4' }],
    ['a nested value', { ...body, output: { ...body.output, fileState: '10002' } }],
    ['a deeply nested value', { ...body, output: { ...body.output, meta: { ...body.output.meta, h: 361 } } }],
    [
      'array order',
      {
        ...body,
        output: {
          ...body.output,
          meta: {
            ...body.output.meta,
            tags: [
              { k: 'a', v: 1 },
              { k: 'b', v: 2 },
            ],
          },
        },
      },
    ],
    ['an extra field', { ...body, tag: '' }],
    ['null instead of a missing field', { ...body, extra: null }],
    ['a renamed key', { ...body, imageID: 'img-1', imageId: undefined }],
  ])('differs on %s', (_what, other) => {
    expect(eventKey(other)).not.toBe(eventKey(body));
  });

  test(
    'property: a JSON object keeps its canonical form and eventKey when its keys are shuffled at every ' + 'depth',
    () => {
      let reordered = 0;
      fc.assert(
        fc.property(
          fc.object({ maxDepth: 4 }).map((o) => JSON.parse(JSON.stringify(o))),
          fc.nat(),
          (value, seed) => {
            const shuffled = reorderKeysDeep(value, seed);
            if (JSON.stringify(shuffled) !== JSON.stringify(value)) reordered += 1;
            expect(shuffled).toStrictEqual(value);
            expect(canonicalJson(shuffled)).toBe(canonicalJson(value));
            expect(eventKey(shuffled)).toBe(eventKey(value));
          },
        ),
        { numRuns: 300 },
      );
      // The property is not vacuous: most runs really changed the key order.
      expect(reordered).toBeGreaterThan(100);
    },
  );

  test('property: JSON values with different content have different canonical forms and keys', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), fc.jsonValue({ maxDepth: 3 }), (a, b) => {
        // The canonical form loses nothing: it parses back to the value itself.
        expect(JSON.parse(canonicalJson(a))).toStrictEqual(JSON.parse(JSON.stringify(a)));
        fc.pre(canonicalJson(a) !== canonicalJson(b));
        expect(eventKey(a)).not.toBe(eventKey(b));
      }),
      { numRuns: 300 },
    );
  });
});
