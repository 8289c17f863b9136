import { parseCallback, type Callback } from '../domain/callback.ts';
import { groupByItem, groupByTask, type Prepared } from './prepare-record.ts';
import type { QueuedCallback } from '../queue-message.ts';

/** A record to apply, its names set after the parse: the grouping must hold whatever they contain. */
function applying(appKey: string, id: string, fileName: string): Prepared {
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
  return { kind: 'apply', msg: {} as QueuedCallback, cb, sequence: null };
}

describe('group keys', () => {
  test('parts holding the separator a join would use never make two items or two tasks one', () => {
    const prepared = [
      applying('k', 'x', 'y\u0000z'),
      applying('k', 'x\u0000y', 'z'),
      applying('k\u0000x', 'y', 'z'),
      applying('k', 'x', 'y\u0000z'),
    ];
    expect([...groupByItem(prepared).values()]).toEqual([[0, 3], [1], [2]]);
    expect([...groupByTask(prepared).values()]).toEqual([[0, 3], [1], [2]]);
  });
});
