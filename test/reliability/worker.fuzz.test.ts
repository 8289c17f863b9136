// Fuzzing the worker: batches that mix realistic callbacks (the lifecycle arbitraries, some carrying
// `__proto__`/`constructor` keys or huge unknown fields) with records that can never be applied (bad
// JSON, wrong types, missing ids, prototype-pollution keys, huge strings, deep nesting, keys DynamoDB
// cannot hold, a forged signature, no service attribute), through processBatch and DynamoTaskStore on
// dynalite. A bad record never fails its batch-mates and is never retried: it is quarantined with its raw
// body; the valid callbacks end in the tasks the domain's oracle computes.
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { DynamoTaskStore } from '../../lib/aws/dynamo/read/task-store.ts';
import { parseCallback } from '../../lib/domain/callback.ts';
import { reduceTask } from '../../lib/domain/reduce-task.ts';
import type { QuarantineEntry, QuarantineReason } from '../../lib/domain/task-store.ts';
import {
  anyLifecycles,
  callbacksOf,
  interleavedDeliveries,
  type Body,
  type Delivery,
  type Lifecycle,
} from '../support/lifecycles.ts';
import { createLogger } from '../../lib/log.ts';
import { Attr } from '../../lib/queue-message.ts';
import type { SignatureVerdict } from '../../lib/signature/verdicts.ts';
import { ID_FIELD_OF, type Service } from '../../lib/platform/services.ts';
import { processBatch } from '../../lib/worker/process-batch.ts';
import { startDynamo, type LocalDynamo } from '../../devkit/local/dynamo.ts';
import { sqsEvent, sqsRecord } from '../support/sqs-events.ts';
import { captureLogs, type LogCapture } from './support/log-capture.ts';

let db: LocalDynamo;
let logs: LogCapture;
const log = createLogger('worker');
const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort();

beforeAll(async () => {
  db = await startDynamo();
  logs = captureLogs();
});
afterAll(async () => {
  logs.restore();
  await db.stop();
});

const idField = (service: Service) => ID_FIELD_OF[service];

/** A body parsed from text, so that "__proto__" stays an own key instead of setting a prototype. */
const withKeys = (body: Body, members: string[]): Body => {
  const text = JSON.stringify(body);
  return JSON.parse(`{${members.join(',')}${members.length ? ',' : ''}${text.slice(1)}`) as Body;
};

const POLLUTION = [
  '"__proto__":{"polluted":"yes","status":"completed"}',
  '"constructor":{"prototype":{"polluted":"yes"}}',
  '"prototype":{"eventCount":999}',
  '"hasOwnProperty":"x"',
];

// ---------------------------------------------------------------------------------------------------
// Valid callbacks: realistic lifecycles, some bodies with pollution keys or a huge unknown field.

const decorated = (lifecycle: Lifecycle): fc.Arbitrary<Lifecycle> =>
  fc
    .array(fc.constantFrom('plain', 'plain', 'plain', 'pollution', 'huge'), {
      minLength: lifecycle.bodies.length,
      maxLength: lifecycle.bodies.length,
    })
    .map((kinds) => ({
      ...lifecycle,
      bodies: lifecycle.bodies.map((b, i) =>
        kinds[i] === 'pollution'
          ? withKeys(b, POLLUTION.slice(0, 1 + (i % POLLUTION.length)))
          : kinds[i] === 'huge'
            ? { ...b, note: 'n'.repeat(20_000 + i) }
            : b,
      ),
    }));

// ---------------------------------------------------------------------------------------------------
// Records that can never be applied, each with the reason it must be quarantined for.

interface Poison {
  service: Service;
  raw: string;
  /** What the record carries instead of a genuine service attribute. */
  serviceAttribute: string | null;
  verdict: SignatureVerdict;
  reason: QuarantineReason;
  kind: string;
}

const poison = (kind: string, service: Service, raw: string, extra: Partial<Poison> = {}): Poison => ({
  kind,
  service,
  raw,
  serviceAttribute: service,
  verdict: 'valid',
  reason: 'invalid_callback',
  ...extra,
});

const WRONG_VALUES: Record<string, unknown[]> = {
  type: ['x', 0, 9, null, [], {}, true, '1e0'],
  timestamp: ['abc', -1, 1.5, null, {}, true, ''],
  code: ['x', null, {}, [], true, ''],
  appKey: [1, '', null, {}, []],
  id: [5, '', null, [], {}],
  output: ['x', null, 5, []],
};

function poisonFrom(lifecycle: Lifecycle, pick: number, variant: number, seed: number): Poison {
  const { service } = lifecycle;
  const body = lifecycle.bodies[pick % lifecycle.bodies.length]!;
  const text = JSON.stringify(body);
  const kinds = [
    'bad-json',
    'wrong-type',
    'missing-id',
    'pollution',
    'huge-string',
    'deep-nesting',
    'wrong-service',
    'no-service',
    'forged',
    'long-task-id',
    'long-file-name',
    'long-id-in-pollution',
  ];
  const kind = kinds[variant % kinds.length]!;
  switch (kind) {
    case 'bad-json':
      return poison(
        kind,
        service,
        [
          text.slice(0, 1 + (seed % (text.length - 2))),
          `${text}}`,
          text.replace(/:/, ''),
          `\u0000${text}`,
          "{'type':1}",
          '',
        ][seed % 6]!,
      );
    case 'wrong-type': {
      const fields = Object.keys(WRONG_VALUES).filter((f) => f !== 'output' || 'output' in body);
      const field = fields[seed % fields.length]!;
      const values = WRONG_VALUES[field]!;
      return poison(
        kind,
        service,
        JSON.stringify({ ...body, [field === 'id' ? idField(service) : field]: values[seed % values.length] }),
      );
    }
    case 'missing-id': {
      const { [idField(service)]: _dropped, ...rest } = body;
      return poison(kind, service, JSON.stringify(rest));
    }
    case 'pollution':
      return poison(kind, service, JSON.stringify(withKeys({ ...body, type: 'not-a-type' }, POLLUTION)));
    case 'huge-string':
      return poison(
        kind,
        service,
        JSON.stringify({ ...body, [['type', 'code', 'timestamp'][seed % 3]!]: 'x'.repeat(60_000) }),
      );
    case 'deep-nesting': {
      const depth = 5_000 + (seed % 15_000);
      return poison(kind, service, `${text.slice(0, -1)},"nested":${'['.repeat(depth)}${']'.repeat(depth)}}`);
    }
    case 'wrong-service':
      // A recording body on the screenshot queue path, or the reverse: it names no task of that service.
      return poison(kind, service === 'recording' ? 'screenshot' : 'recording', JSON.stringify({ ...body, type: 2 }));
    case 'no-service':
      return poison(kind, service, text, { serviceAttribute: seed % 2 ? null : 'video' });
    case 'forged':
      return poison(kind, service, text, { verdict: 'invalid', reason: 'invalid_signature' });
    case 'long-task-id':
      // DynamoDB keys hold at most 2048 bytes (partition) and 1024 bytes (sort): such a callback can
      // never be stored, however often it is retried.
      return poison(
        kind,
        service,
        JSON.stringify({ ...body, [idField(service)]: `id-${'x'.repeat(2100 + (seed % 500))}` }),
      );
    case 'long-file-name': {
      const output = { ...(body.output as Body | undefined), fileName: `f-${'y'.repeat(1100 + (seed % 500))}.mp4` };
      return poison(kind, service, JSON.stringify({ ...body, type: service === 'recording' ? 2 : 4, output }));
    }
    default:
      return poison(
        kind,
        service,
        JSON.stringify(withKeys({ ...body, roomId: 'r'.repeat(2100) }, POLLUTION.slice(0, 2))),
      );
  }
}

// ---------------------------------------------------------------------------------------------------

let run = 0;
function isolate(lifecycles: Lifecycle[], deliveries: Delivery[]) {
  const prefix = `wf${++run}-`;
  const rename = (service: Service, body: Body): Body => ({
    ...body,
    [idField(service)]: prefix + String(body[idField(service)]),
  });
  return {
    lifecycles: lifecycles.map((l) => ({ ...l, id: prefix + l.id, bodies: l.bodies.map((b) => rename(l.service, b)) })),
    deliveries: deliveries.map((d) => ({ service: d.service, body: rename(d.service, d.body) })),
  };
}

function poisonRecord(p: Poison, messageId: string): SQSRecord {
  const record = sqsRecord(p.service, p.raw, { messageId, receivedAt: Date.now(), verdict: p.verdict });
  if (p.serviceAttribute === null) delete record.messageAttributes[Attr.service];
  else record.messageAttributes[Attr.service]!.stringValue = p.serviceAttribute;
  return record;
}

const expectedQuarantine = new Map<string, Poison>();
const kindsSeen = new Set<string>();
let validRecords = 0;

const scenario = anyLifecycles({ maxLength: 3 })
  .chain((ls) => fc.tuple(...ls.map(decorated)))
  .chain((ls) =>
    fc.tuple(
      fc.constant(ls),
      interleavedDeliveries(ls, { maxExtra: 5 }),
      fc.array(fc.tuple(fc.nat({ max: ls.length - 1 }), fc.nat(), fc.nat(), fc.nat()), { minLength: 1, maxLength: 8 }),
      fc.integer({ min: 1, max: 10 }),
      fc.nat(),
    ),
  );

describe('worker fuzz: valid and invalid records in the same batches', () => {
  test(
    'bad records are quarantined and acknowledged, never failing a batch-mate; valid tasks equal the ' + 'oracle',
    async () => {
      await fc.assert(
        fc.asyncProperty(scenario, async ([ls, ds, poisons, batchSize, seed]) => {
          const { lifecycles, deliveries } = isolate(ls, ds);
          const bad = poisons.map(([which, pick, variant, s]) => poisonFrom(lifecycles[which]!, pick, variant, s));
          // The bad records must really be bad: the domain's own parse, or what the store can hold, says so.
          for (const p of bad) {
            if (
              [
                'deep-nesting',
                'long-task-id',
                'long-file-name',
                'long-id-in-pollution',
                'forged',
                'no-service',
              ].includes(p.kind)
            )
              continue;
            expect(parseCallback(p.service, p.raw).ok).toBe(false);
          }
          const records: SQSRecord[] = deliveries.map((d) => sqsRecord(d.service, d.body));
          for (const r of records) logs.body(r.body);
          const badIds = new Set<string>();
          bad.forEach((p, i) => {
            const messageId = `poison-${run}-${i}`;
            badIds.add(messageId);
            expectedQuarantine.set(messageId, p);
            kindsSeen.add(p.kind);
            // Each bad record takes a seeded place among the good ones.
            records.splice((seed + i * 31) % (records.length + 1), 0, poisonRecord(p, messageId));
          });
          validRecords += deliveries.length;

          let pending = records;
          for (let round = 0; pending.length > 0 && round < 10; round++) {
            const failed: SQSRecord[] = [];
            for (let i = 0; i < pending.length; i += batchSize) {
              const batch = pending.slice(i, i + batchSize);
              const store = new DynamoTaskStore({ client: db.client, tableName: db.tableName, inlineKeys: 1 });
              const res = await processBatch(sqsEvent(batch), { store, log, concurrency: 4 });
              const ids = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
              expect([...ids].filter((id) => badIds.has(id))).toEqual([]);
              failed.push(...batch.filter((r) => ids.has(r.messageId)));
            }
            pending = failed;
          }
          expect(pending).toEqual([]);

          const store = new DynamoTaskStore({ client: db.client, tableName: db.tableName });
          for (const l of lifecycles) expect(await store.getTask(l.id)).toEqual(reduceTask(callbacksOf(l)));
          expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        }),
        { numRuns: 30 },
      );
    },
  );

  test('each bad record is in the quarantine once, with its raw body and reason', async () => {
    expect(expectedQuarantine.size).toBeGreaterThan(60);
    // Every kind of bad record was tried.
    expect(kindsSeen.size).toBe(12);
    const store = new DynamoTaskStore({ client: db.client, tableName: db.tableName });
    const found = new Map<string, QuarantineEntry[]>();
    for await (const entry of store.listQuarantine({ sinceDays: 2 })) {
      found.set(entry.messageId, [...(found.get(entry.messageId) ?? []), entry]);
    }
    for (const [messageId, p] of expectedQuarantine) {
      const entries = found.get(messageId) ?? [];
      expect({ messageId, kind: p.kind, count: entries.length }).toEqual({ messageId, kind: p.kind, count: 1 });
      expect({ kind: p.kind, reason: entries[0]!.reason }).toEqual({ kind: p.kind, reason: p.reason });
      expect(entries[0]!.raw === p.raw).toBe(true);
    }
    // Nothing else was quarantined: no valid callback was kept aside.
    expect([...found.keys()].filter((id) => !expectedQuarantine.has(id))).toEqual([]);
  });

  test('Object.prototype is untouched, and no log line carries a whole body', () => {
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeNames);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(validRecords).toBeGreaterThan(300);
    for (const p of expectedQuarantine.values()) logs.body(p.raw);
    expect(logs.leaks()).toEqual([]);
  });
});

describe('records the store could never hold, next to good ones', () => {
  const T0 = 1_763_798_400_000;
  const slice = (id: string, extra: Record<string, unknown> = {}) => ({
    timestamp: T0,
    type: 2,
    appKey: 'demo-app',
    recordId: id,
    roomId: 'room-1',
    sessionId: 'sess-1',
    userId: '',
    mode: 3,
    extra: '',
    code: 200,
    errorMessage: 'success',
    output: { fileName: `${id}.mp4`, fileSize: 1 },
    ...extra,
  });
  const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
  const cases: [string, Record<string, unknown>, RegExp][] = [
    // Written into the text below: JSON.stringify itself cannot go that deep.
    ['nested 10,000 deep', { nested: 'DEEP' }, /nested too deeply/],
    ['a 2,100-byte recordId', { recordId: `rec-${'x'.repeat(2100)}` }, /^recordId is too long/],
    [
      'a 1,100-byte file name',
      { output: { fileName: `${'f'.repeat(1100)}.mp4`, fileSize: 1 } },
      /^output\.fileName is too long/,
    ],
    ['a 2,100-byte roomId (an index key)', { roomId: 'r'.repeat(2100) }, /^roomId is too long/],
    ['a 2,100-byte appKey (an index key)', { appKey: 'a'.repeat(2100) }, /^appKey is too long/],
    // dynalite does not enforce DynamoDB's 32 levels of nesting; DynamoDB refuses the header every time.
    [
      'a start whose config is nested 40 deep',
      { type: 1, config: JSON.parse(`${'{"a":'.repeat(40)}1${'}'.repeat(40)}`) },
      /^config is nested deeper/,
    ],
  ];

  test.each(cases)(
    '%s: quarantined at once with the reason, its batch-mates applied',
    async (_name, change, detail) => {
      const id = `rec-limit-${++run}`;
      const bad = JSON.stringify({ ...slice(id), ...change }).replace('"DEEP"', deep);
      const records = [
        sqsRecord('recording', slice(`${id}-a`)),
        sqsRecord('recording', bad, { messageId: `${id}-bad`, receivedAt: Date.now() }),
        sqsRecord('recording', slice(`${id}-b`)),
      ];
      const store = new DynamoTaskStore({ client: db.client, tableName: db.tableName });
      const res = await processBatch(sqsEvent(records), { store, log, concurrency: 3 });
      expect(res.batchItemFailures).toEqual([]);
      expect(res.outcomes).toEqual(['applied', 'quarantined', 'applied']);
      const entries: QuarantineEntry[] = [];
      for await (const e of store.listQuarantine({ sinceDays: 1 })) if (e.messageId === `${id}-bad`) entries.push(e);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ reason: 'invalid_callback', detail: expect.stringMatching(detail) });
      expect(entries[0]!.raw === bad).toBe(true);
      expect((await store.getTask(`${id}-a`))?.eventCount).toBe(1);
    },
  );
});
