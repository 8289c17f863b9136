import type { BatchRecord } from '../../../domain/batch.ts';
import { parseCallback, type Callback } from '../../../domain/callback.ts';
import type { DeliveredCallback } from '../../../domain/task-store.ts';
import { createLogger } from '../../../log.ts';
import { planBatch } from './batch-plan.ts';

/** A record to apply, its names set after the parse: the grouping must hold whatever they contain. */
function applying(appKey: string, id: string, fileName: string): BatchRecord {
  const parsed = parseCallback('recording', {
    timestamp: 1763800000000,
    type: 2,
    appKey: 'a',
    recordId: 'r',
    code: 200,
    output: { fileName: 'f', fileSize: 1 },
  });
  if (!parsed.ok) throw new Error(parsed.errors.join());
  const cb: Callback = { ...parsed.callback, appKey, id, file: { fileName, size: 1 } };
  const delivered = { callback: cb } as DeliveredCallback;
  return {
    messageId: `${appKey}/${id}/${fileName}`,
    parsed: { kind: 'apply', callback: cb, delivered, sequence: null },
    receiveCount: 1,
    receivedBefore: false,
    resent: false,
    log: createLogger('test'),
    outcome: 'failed',
  };
}

describe('group keys', () => {
  test('parts holding the separator a join would use never make two items or two tasks one', () => {
    const prepared = [
      applying('k', 'x', 'y\u0000z'),
      applying('k', 'x\u0000y', 'z'),
      applying('k\u0000x', 'y', 'z'),
      applying('k', 'x', 'y\u0000z'),
    ];
    const plan = planBatch(prepared);
    const at = (group: readonly BatchRecord[]) => group.map((r) => prepared.indexOf(r));
    expect(plan.groups.map(at)).toEqual([[0, 3], [1], [2]]);
    expect(plan.tasks.map((t) => at(t.records))).toEqual([[0, 3], [1], [2]]);
  });
});
