import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { type LocalDynamo, startDynamo } from '../../../../devkit/local/dynamo.ts';
import { parseCallback } from '../../../domain/callback.ts';
import { findUnstorableNumber, numberProblem, unstorableNumberIn } from './numbers.ts';

let db: LocalDynamo;
beforeAll(async () => {
  db = await startDynamo();
});
afterAll(() => db.stop());

/** Whether DynamoDB (dynalite, which applies the same rules) stores this number text. */
async function stored(text: string): Promise<boolean> {
  try {
    await db.client.send(
      new PutItemCommand({ TableName: db.tableName, Item: { pk: { S: `n#${text}` }, sk: { S: '#' }, n: { N: text } } }),
    );
    return true;
  } catch (err) {
    if ((err as Error).name !== 'ValidationException') throw err;
    return false;
  }
}

describe('numberProblem', () => {
  const edges = [
    '0',
    '-0',
    '1e-130',
    '-1e-130',
    '9.99e-131',
    '1e-200',
    '9.999999999999999e+125',
    '-9.999999999999999e+125',
    '1e+126',
    '-1e+126',
    '1e+200',
    '12345678901234567890123456789012345678',
    '123456789012345678901234567890123456789',
    '0.00000000000000000000000000000000000001234',
    '1.2345678901234567890123456789012345678e5',
    '1.23456789012345678901234567890123456789e5',
    '1000000000000000000000000000000000000000000',
  ];

  test.each(edges)('%s: refused exactly when DynamoDB refuses it', async (text) => {
    expect(numberProblem(text) === null).toBe(await stored(text));
  });

  test('what a JSON body can hold that DynamoDB cannot', () => {
    expect(numberProblem(1e200)).toBe('1e126 or more in magnitude');
    expect(numberProblem(-1e-200)).toBe('closer to 0 than 1e-130');
    expect(numberProblem(Number(`1${'0'.repeat(400)}`))).toBe('not a finite number');
    expect(numberProblem(Number.NaN)).toBe('not a finite number');
    expect(numberProblem('39'.repeat(20))).toBe('40 significant digits long, more than 38');
    for (const fine of [0, -0, 200, -1.5, 1e125, 2 ** 60, Number.MAX_SAFE_INTEGER + 2, 5e-130]) {
      expect([fine, numberProblem(fine)]).toEqual([fine, null]);
    }
  });
});

describe('findUnstorableNumber', () => {
  test('names the first unstorable number at any depth, by its path', () => {
    const config = { a: 1, b: [2, { c: 'x', d: [3, 1e-131] }], e: 1e300 };
    expect(findUnstorableNumber(config, 'config')).toEqual({
      path: 'config.b[1].d[1]',
      problem: 'closer to 0 than 1e-130',
    });
    expect(findUnstorableNumber({ a: [1, '1e999', null, true] }, 'config')).toBeNull();
  });

  test('a value nested far deeper than the stack goes is walked without overflow', () => {
    let deep: unknown = 1e-300;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findUnstorableNumber(deep, 'x')?.problem).toBe('closer to 0 than 1e-130');
  });
});

describe('unstorableNumberIn', () => {
  const parse = (service: 'recording' | 'screenshot', body: object) => {
    const r = parseCallback(service, JSON.stringify(body));
    if (!r.ok) throw new Error(r.errors.join());
    return r.callback;
  };
  const recording = { timestamp: 1_763_798_400_000, appKey: 'a', recordId: 'r', roomId: 'x', code: 200 };
  const screenshot = { timestamp: 1_763_798_400_000, appKey: 'a', imageId: 'i', roomId: 'x', code: 200 };

  test('each field the worker stores, named as the body names it', () => {
    const cases: [ReturnType<typeof parse>, string][] = [
      [parse('recording', { ...recording, type: 1, code: 1e200 }), 'code'],
      [parse('recording', { ...recording, type: 1, code: `1${'0'.repeat(400)}` }), 'code'],
      [parse('recording', { ...recording, type: 1, config: { x: 1e-200 } }), 'config.x'],
      [
        parse('recording', { ...recording, type: 1, config: { nested: [{ v: '-1e130' }], w: `${'9'.repeat(400)}` } }),
        'config.w',
      ],
      [parse('recording', { ...recording, type: 2, output: { fileName: 'f', fileSize: 1e130 } }), 'output.fileSize'],
      [parse('recording', { ...recording, type: 4, code: -1e-140, output: { fileName: 'f' } }), 'code'],
      [
        parse('screenshot', { ...screenshot, type: 4, output: { fileName: 'f', fileState: `5${'0'.repeat(400)}` } }),
        'output.fileState',
      ],
      [
        parse('screenshot', { ...screenshot, type: 3, config: { slicesSec: `2${'0'.repeat(200)}` } }),
        'config.slicesSec',
      ],
    ];
    for (const [cb, field] of cases) {
      const detail = unstorableNumberIn(cb);
      expect([field, detail?.startsWith(`${field} is `), detail]).toEqual([
        field,
        true,
        expect.stringMatching(/DynamoDB/),
      ]);
    }
  });

  test('nothing to say about a callback whose numbers all fit', () => {
    const cb = parse('recording', {
      ...recording,
      type: 1,
      code: '200',
      mode: 3,
      config: { trigger: 0, slicesMin: '30', big: 2 ** 70, small: 1e-100, text: '1e999' },
    });
    expect(unstorableNumberIn(cb)).toBeNull();
  });
});
