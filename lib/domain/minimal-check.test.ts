import { readFileSync, readdirSync } from 'node:fs';
import fc from 'fast-check';
import { minimalCheck } from './minimal-check.ts';
import type { Service } from '../platform/services.ts';

const fixturesDir = new URL('../../test/fixtures/', import.meta.url);
const fixtures = readdirSync(fixturesDir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({
    file: f,
    service: f.split('-')[0] as Service,
    body: JSON.parse(readFileSync(new URL(f, fixturesDir), 'utf8')),
  }));

const recording = { type: 1, appKey: 'demo-app', recordId: 'rec-1' };
const screenshot = { type: 1, appKey: 'demo-app', imageId: 'img-1' };

function failureOf(service: Service, body: unknown): string {
  const result = minimalCheck(service, body);
  if (result.ok) throw new Error(`expected a failure for ${JSON.stringify(body)}`);
  expect(result.code).toBe('invalid_body');
  return result.message;
}

describe('minimalCheck', () => {
  test.each(fixtures)('accepts fixture $file', ({ service, body }) => {
    const result = minimalCheck(service, body);
    expect(result).toEqual({
      ok: true,
      type: body.type,
      appKey: body.appKey,
      id: service === 'recording' ? body.recordId : body.imageId,
    });
  });

  test('accepts numeric strings for type and returns the number', () => {
    expect(minimalCheck('recording', { ...recording, type: '4' })).toEqual({
      ok: true,
      type: 4,
      appKey: 'demo-app',
      id: 'rec-1',
    });
    expect(minimalCheck('screenshot', { ...screenshot, type: ' 3 ' })).toMatchObject({ ok: true, type: 3 });
    expect(minimalCheck('recording', { ...recording, type: '2.0' })).toMatchObject({ ok: true, type: 2 });
  });

  test('ignores unknown and optional fields', () => {
    expect(minimalCheck('recording', { ...recording, brandNew: { x: [1] }, code: 'x' })).toMatchObject({ ok: true });
  });

  test.each([null, [], [recording], 'text', 42, true])('rejects a body that is not an object: %p', (body) => {
    expect(failureOf('recording', body)).toMatch(/JSON object/);
  });

  test.each([
    ['recording', { appKey: 'a', recordId: 'r' }, /"type" is missing/],
    ['recording', { type: null, appKey: 'a', recordId: 'r' }, /"type" is missing/],
    ['recording', { ...recording, type: 5 }, /"type" must be one of 1, 2, 3, 4/],
    ['recording', { ...recording, type: 0 }, /"type"/],
    ['recording', { ...recording, type: 1.5 }, /"type"/],
    ['recording', { ...recording, type: '1.5' }, /"type"/],
    ['recording', { ...recording, type: 'start' }, /"type"/],
    ['recording', { ...recording, type: '' }, /"type"/],
    ['recording', { ...recording, type: '-1' }, /"type"/],
    ['recording', { ...recording, type: '0x4' }, /"type"/],
    ['recording', { ...recording, type: true }, /"type"/],
    ['recording', { ...recording, type: [1] }, /"type"/],
    ['screenshot', { ...screenshot, type: 2 }, /"type" must be one of 1, 3, 4 for screenshot/],
    ['screenshot', { ...screenshot, type: '2' }, /"type"/],
    ['recording', { type: 1, recordId: 'r' }, /"appKey" is missing/],
    ['recording', { ...recording, appKey: '' }, /"appKey" must be a non-empty string/],
    ['recording', { ...recording, appKey: '  ' }, /"appKey"/],
    ['recording', { ...recording, appKey: 7 }, /"appKey"/],
    ['recording', { ...recording, appKey: null }, /"appKey"/],
    ['recording', { type: 1, appKey: 'a' }, /"recordId" is missing/],
    ['recording', { ...recording, recordId: '' }, /"recordId" must be a non-empty string/],
    ['recording', { ...recording, recordId: 12 }, /"recordId"/],
    ['recording', { ...screenshot }, /"recordId"/],
    ['screenshot', { type: 1, appKey: 'a' }, /"imageId" is missing/],
    ['screenshot', { ...screenshot, imageId: '' }, /"imageId" must be a non-empty string/],
    ['screenshot', { ...recording }, /"imageId"/],
  ] as const)('%s %j fails naming the field', (service, body, message) => {
    expect(failureOf(service, body)).toMatch(message);
  });

  test('any accepted body has a valid type, a non-empty appKey and id', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<Service>('recording', 'screenshot'),
        fc.dictionary(
          fc.constantFrom('type', 'appKey', 'recordId', 'imageId', 'other'),
          fc.oneof(
            fc.string(),
            fc.integer({ min: -1, max: 6 }),
            fc.constant(null),
            fc.constantFrom('1', '2', '3', '4'),
          ),
        ),
        (service, body) => {
          const result = minimalCheck(service, body);
          if (!result.ok) return;
          expect((service === 'recording' ? [1, 2, 3, 4] : [1, 3, 4]).includes(result.type)).toBe(true);
          expect(result.appKey.trim()).not.toBe('');
          expect(result.id.trim()).not.toBe('');
        },
      ),
      { numRuns: 300 },
    );
  });
});
