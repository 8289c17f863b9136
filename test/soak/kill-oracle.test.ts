// The kill part's judgement (./kill-oracle.ts) on the fixtures' recording task (start, slice, upload ok, end,
// upload failed: two files, one uploaded, one failed), its expectations worked out by hand from the contract.
import { readFileSync } from 'node:fs';
import { eventKey } from '../../lib/domain/canonical.ts';
import { reduceTask } from '../../lib/domain/reduce-task.ts';
import type { TaskEvent } from '../../lib/domain/task-events.ts';
import type { Task } from '../../lib/domain/task.ts';
import type { TaskSummary } from '../../lib/domain/task-summary.ts';
import { mustParse } from '../support/lifecycles.ts';
import {
  countProblems,
  eventFactProblems,
  fileCountsOf,
  ledgerProblems,
  owedCallbacks,
  type SentCallback,
  taskOfProblem,
} from './kill-oracle.ts';

type Body = Record<string, unknown>;
const fixture = (name: string): Body =>
  JSON.parse(readFileSync(new URL(`../fixtures/${name}.json`, import.meta.url), 'utf8')) as Body;
const NAMES = ['1-start-mix', '2-slice', '4-upload-ok', '3-end', '4-upload-failed'];
const bodies = NAMES.map((n) => fixture(`recording-${n}`));
const ID = '7nQ2f0vB-rec-001';
const sent = (body: Body, delivered = true): SentCallback => ({ service: 'recording', body, delivered, taskId: ID });
const keyOf = (i: number) => eventKey(bodies[i]);
const task = reduceTask(bodies.map((b) => mustParse('recording', b)))!;
const UPLOADED = 'sN3kL9xQ2aT7_room-1024_1763798400000.mp4';
const FAILED = 'sN3kL9xQ2aT7_room-1024_1763802000000.mp4';

test('owed: the acknowledged callbacks, and those applied though never acknowledged; not the others', () => {
  const [start, slice, upload] = bodies as [Body, Body, Body];
  const owed = owedCallbacks([sent(start), sent(slice, false), sent(upload, false)], new Set([eventKey(slice)]));
  expect(owed.map((o) => [o.body, o.delivered])).toEqual([
    [start, true],
    [slice, true],
  ]);
});

test('the ledger: each acknowledged callback stored once, duplicates and reordered keys being one callback', () => {
  const reordered = Object.fromEntries(Object.entries(bodies[0]!).reverse());
  const all = [...bodies.map((b) => sent(b)), sent(reordered), sent(bodies[2]!)];
  expect(
    ledgerProblems(
      ID,
      all,
      bodies.map((_, i) => keyOf(i)),
    ),
  ).toEqual([]);
});

test('the ledger names a callback acknowledged but never applied, and one applied twice', () => {
  const problems = ledgerProblems(
    ID,
    bodies.map((b) => sent(b)),
    [keyOf(0), keyOf(1), keyOf(1), keyOf(3), keyOf(4)],
  );
  expect(problems).toEqual([
    `task ${ID}: callback type 2 at 1763802000000 file ${UPLOADED} applied 2 times (${keyOf(1)})`,
    `task ${ID}: acknowledged callback type 4 at 1763802030000 file ${UPLOADED} never applied (${keyOf(2)})`,
  ]);
});

test('the ledger: an unacknowledged callback may be stored once, not twice; one never sent not at all', () => {
  const all = [sent(bodies[0]!), sent(bodies[1]!, false), sent(bodies[2]!, false)];
  expect(ledgerProblems(ID, all, [keyOf(0), keyOf(1)])).toEqual([]);
  expect(ledgerProblems(ID, all, [keyOf(0), keyOf(2), keyOf(2), keyOf(3)])).toEqual([
    `task ${ID}: an unacknowledged callback applied 2 times (${keyOf(2)})`,
    `task ${ID}: a callback never sent is stored (${keyOf(3)})`,
  ]);
});

/** The task's row as a listing would show it, its counts as its files say. */
const rowOf = (t: Task, over: Partial<TaskSummary> = {}): TaskSummary => ({
  service: t.service,
  id: t.id,
  appKey: t.appKey,
  roomId: t.roomId,
  sessionId: t.sessionId,
  userId: t.userId,
  status: t.status,
  startedAt: t.startedAt,
  endedAt: t.endedAt,
  updatedAt: t.updatedAt!,
  sortAt: t.startedAt!,
  eventCount: t.eventCount,
  fileCount: 2,
  pendingFiles: 0,
  failedFiles: 1,
  lostFiles: 0,
  stalledSince: null,
  settledAt: null,
  durationMs: null,
  ...over,
});

test('counts: a lost file is a failed one, counted lost too; a pending file is neither', () => {
  const files = task.files.map((f) => (f.fileName === FAILED ? { ...f, upload: 'lost' as const } : f));
  expect(fileCountsOf(files)).toEqual({ total: 2, pending: 0, uploaded: 1, failed: 1, lost: 1 });
  const pending = { ...task.files[0]!, fileName: 'third.mp4', upload: 'pending' as const };
  expect(fileCountsOf([...task.files, pending])).toEqual({ total: 3, pending: 1, uploaded: 1, failed: 1, lost: 0 });
});

test('counts: the row and the counts on the task JSON must say what its files say', () => {
  expect(countProblems(task, rowOf(task))).toEqual([]);
  expect(countProblems(task, undefined)).toEqual([`task ${ID}: not listed`]);
  expect(countProblems(task, rowOf(task, { failedFiles: 0, eventCount: 4 }))).toEqual([
    `task ${ID}: listed with counts {"total":2,"pending":0,"uploaded":2,"failed":0,"lost":0}, its files make ` +
      '{"total":2,"pending":0,"uploaded":1,"failed":1,"lost":0}',
    `task ${ID}: listed with eventCount 4, its JSON says 5`,
  ]);
  const counted = { ...task, counts: { total: 2, pending: 1, uploaded: 1, failed: 0, lost: 0 } };
  expect(countProblems(counted, rowOf(task))).toEqual([
    `task ${ID}: counts {"total":2,"pending":1,"uploaded":1,"failed":0,"lost":0} on its JSON, its files make ` +
      '{"total":2,"pending":0,"uploaded":1,"failed":1,"lost":0}',
  ]);
});

/** An event of the task, its counts as the stored task's unless given. */
const event = (type: TaskEvent['type'], sequence: number, over: Partial<TaskEvent['task']> = {}): TaskEvent => ({
  version: 1,
  id: `${type}-${sequence}`,
  type,
  occurredAt: task.updatedAt!,
  sequence,
  task: {
    service: 'recording',
    id: ID,
    appKey: task.appKey,
    roomId: task.roomId,
    sessionId: task.sessionId,
    userId: task.userId,
    status: 'upload_failed',
    files: { total: 2, pending: 0, uploaded: 1, failed: 1, lost: 0 },
    ...over,
  },
});

test('events: true of the stored task, one task per sequence number, none of a task never sent', () => {
  expect(eventFactProblems([event('task.started', 1), event('task.ended', 5)], [task])).toEqual([]);
  const unended = { ...task, endedAt: null };
  expect(eventFactProblems([event('task.ended', 5)], [unended])).toEqual([`task ${ID}: task.ended, but no end stored`]);
  const other = { ...event('task.started', 1), task: { ...event('task.started', 1).task, id: 'rec-never' } };
  expect(
    eventFactProblems([event('task.ended', 5, { status: 'ended' }), event('task.ended', 5), other], [task]),
  ).toEqual([
    `task ${ID}: two tasks under sequence 5: ${JSON.stringify(event('task.ended', 5, { status: 'ended' }).task)} ` +
      `and ${JSON.stringify(event('task.ended', 5).task)}`,
    '1 events of task rec-never, which the run never sent (task.started first)',
  ]);
});

test('a problem is traced to the first task of the run it names', () => {
  const ids = new Set([ID, 'img-2']);
  expect(taskOfProblem(`task ${ID}: not listed`, ids)).toBe(ID);
  expect(taskOfProblem(`${ID}: status: expected "completed", got "ended"`, ids)).toBe(ID);
  expect(taskOfProblem('fact of time not published: task.stalled of img-2 at 5', ids)).toBe('img-2');
  expect(taskOfProblem('3 dead letters again after the redrive', ids)).toBeNull();
});
