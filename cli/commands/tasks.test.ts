// `tasks list` and `tasks get` on the facts of time: the listing the options ask for, and what the human output
// says of lost files, purge countdowns, stalled and settled tasks, and of each row's end, duration and user.
import type { TaskSummary } from '../../lib/domain/task-summary.ts';
import type { FileView, Task } from '../../lib/domain/task.ts';
import { colors } from '../format.ts';
import { CliError } from '../inspect.ts';
import { durationText, fitList, listQueryOf, purgeNote, renderList, renderTask } from './tasks.ts';

const NOW = Date.UTC(2026, 10, 20, 12, 0, 0);
const H = 3_600_000;
const c = colors(false);

describe('tasks list options', () => {
  test('the filters of the facts of time and of time of change and end', () => {
    expect(
      listQueryOf(
        { lost: true, stalled: true, purgeBefore: 6 * H, updatedSince: '1h', endedSince: '2026-11-20', limit: 5 },
        NOW,
      ),
    ).toMatchObject({
      lost: true,
      stalled: true,
      purgeWithinMs: 6 * H,
      updatedSince: NOW - H,
      endedSince: Date.UTC(2026, 10, 20),
      limit: 5,
    });
    const plain = listQueryOf({ limit: 50 }, NOW);
    for (const key of ['lost', 'stalled', 'purgeWithinMs', 'updatedSince', 'endedSince'])
      expect(plain).not.toHaveProperty(key);
  });

  test('a time that does not parse is one sentence naming the option', () => {
    expect(() => listQueryOf({ updatedSince: 'yesterday', limit: 1 }, NOW)).toThrow(CliError);
    expect(() => listQueryOf({ endedSince: 'soon', limit: 1 }, NOW)).toThrow(/^--ended-since: /);
  });
});

const row = (over: Partial<TaskSummary>): TaskSummary => ({
  service: 'recording',
  id: 'rec-1',
  appKey: 'app',
  roomId: 'room',
  sessionId: 'sess',
  userId: 'user-1',
  status: 'upload_failed',
  startedAt: NOW - 2 * H,
  endedAt: NOW - H + 5 * 60_000,
  updatedAt: NOW - H,
  sortAt: NOW - 2 * H,
  eventCount: 4,
  fileCount: 3,
  pendingFiles: 0,
  failedFiles: 2,
  lostFiles: 1,
  stalledSince: null,
  settledAt: null,
  durationMs: 65 * 60_000,
  ...over,
});

describe('tasks list rows', () => {
  test('user, end and duration columns; failed files say how many are lost; stalled and settled in the status', () => {
    const lines = renderList(
      [
        row({}),
        row({
          id: 'rec-2',
          status: 'recording',
          endedAt: null,
          durationMs: null,
          userId: null,
          stalledSince: NOW - 25 * 60_000,
          failedFiles: 0,
          lostFiles: 0,
        }),
        row({ id: 'rec-3', status: 'completed', settledAt: NOW - 60_000, failedFiles: 0, lostFiles: 0 }),
      ],
      c,
      NOW,
    ).split('\n');
    expect(lines[0]!.split(/\s{2,}/)).toEqual([
      'ID',
      'APP KEY',
      'SERVICE',
      'STATUS',
      'ROOM',
      'SESSION',
      'USER',
      'STARTED',
      'ENDED',
      'DURATION',
      'UPLOADED',
      'FAILED',
      'PENDING',
      'EVENTS',
    ]);
    expect(lines[1]!.split(/\s{2,}/)).toEqual([
      'rec-1',
      'app',
      'recording',
      'upload_failed',
      'room',
      'sess',
      'user-1',
      '2026-11-20T10:00:00Z',
      '2026-11-20T11:05:00Z',
      '1 h 05 min',
      '1',
      '2 (1 lost)',
      '0',
      '4',
    ]);
    expect(lines[2]!.split(/\s{2,}/).slice(0, 10)).toEqual([
      'rec-2',
      'app',
      'recording',
      'recording stalled 25 min',
      'room',
      'sess',
      '-',
      '2026-11-20T10:00:00Z',
      '-',
      '-',
    ]);
    expect(lines[3]!.split(/\s{2,}/)[3]).toBe('completed settled');
  });

  test('tasks list showed no appKey: one id under two appKeys made two rows told apart by nothing', () => {
    const lines = renderList([row({ appKey: 'app-a' }), row({ appKey: 'app-b' })], c, NOW).split('\n');
    const columns = lines[0]!.split(/\s{2,}/);
    expect(columns.slice(0, 3)).toEqual(['ID', 'APP KEY', 'SERVICE']);
    expect(lines.slice(1).map((line) => line.split(/\s{2,}/).slice(0, 2))).toEqual([
      ['rec-1', 'app-a'],
      ['rec-1', 'app-b'],
    ]);
  });

  const widest = (text: string) => Math.max(...text.split('\n').map((line) => line.length));
  const rows = [
    row({ id: 'rec-42-mwq6znhp-0004', appKey: 'demo-app', roomId: 'room-1241', sessionId: '95XMzyazvd8g' }),
  ];

  test('tasks list was wider than the terminal: columns are left out, the least useful first, until it fits', () => {
    // Every column: wider than a 100-column terminal.
    expect(widest(renderList(rows, c, NOW))).toBeGreaterThan(140);
    for (const width of [160, 120, 100, 80]) {
      const { text, leftOut } = fitList(rows, c, NOW, { width });
      expect(widest(text)).toBeLessThanOrEqual(width);
      const heads = text.split('\n')[0]!.split(/\s{2,}/);
      for (const kept of ['ID', 'STATUS', 'STARTED', 'FAILED']) expect(heads).toContain(kept);
      expect([...heads, ...leftOut].sort()).toEqual(
        renderList(rows, c, NOW)
          .split('\n')[0]!
          .split(/\s{2,}/)
          .sort(),
      );
    }
    expect(fitList(rows, c, NOW, { width: 100 }).leftOut.slice(0, 3)).toEqual(['USER', 'SESSION', 'EVENTS']);
    // --wide, or no terminal: every column.
    expect(fitList(rows, c, NOW, { width: 100, wide: true }).leftOut).toEqual([]);
    expect(fitList(rows, c, NOW, {}).leftOut).toEqual([]);
  });

  test('--purge-before: a PURGE column with the earliest deadline and how far it is, kept whatever the width', () => {
    const purge = () => NOW + 3 * H + 5 * 60_000;
    const { text } = fitList(rows, c, NOW, { width: 100, purge });
    const [head, line] = text.split('\n') as [string, string];
    expect(head.split(/\s{2,}/).at(-1)).toBe('PURGE');
    expect(line.split(/\s{2,}/).at(-1)).toBe('2026-11-20T15:05:00Z (in 3 h 05 min)');
    expect(widest(text)).toBeLessThanOrEqual(100);
    expect(
      fitList(rows, c, NOW, { purge: () => null })
        .text.split('\n')[1]!
        .split(/\s{2,}/)
        .at(-1),
    ).toBe('-');
  });
});

const file = (over: Partial<FileView>): FileView => ({
  fileName: 'a.mp4',
  size: 1024,
  url: null,
  upload: 'failed',
  code: 500,
  message: 'upload to storage failed',
  attempts: 3,
  purgeAt: NOW + 3 * H + 5 * 60_000,
  ...over,
});

describe('tasks get', () => {
  test('the countdown to the purge of a failed file, and a lost file as deleted', () => {
    expect(purgeNote(file({}), NOW)).toBe('; purged by the platform at 2026-11-20T15:05:00Z (in 3 h 05 min)');
    expect(purgeNote(file({ purgeAt: NOW + 20 * 60_000 }), NOW)).toBe(
      '; purged by the platform at 2026-11-20T12:20:00Z (in 20 min, sooner than a storage change applies)',
    );
    expect(purgeNote(file({ upload: 'lost', purgeAt: NOW - H }), NOW)).toBe(
      '; deleted by the platform at 2026-11-20T11:00:00Z (lost)',
    );
    expect(purgeNote(file({ upload: 'uploaded', purgeAt: null }), NOW)).toBe('');
  });

  test('stalled and settled times; lost files counted as failed and shown by --failed', () => {
    const task: Task = {
      service: 'recording',
      id: 'rec-1',
      appKey: 'app',
      roomId: 'room',
      sessionId: 'sess',
      userId: null,
      status: 'upload_failed',
      startedAt: NOW - 30 * H,
      endedAt: null,
      updatedAt: NOW - 26 * H,
      extra: null,
      config: null,
      counts: { total: 2, pending: 0, uploaded: 1, failed: 1, lost: 1 },
      files: [
        file({ fileName: 'lost.mp4', upload: 'lost', purgeAt: NOW - 2 * H }),
        file({ fileName: 'ok.mp4', upload: 'uploaded', code: 200, message: null, purgeAt: null }),
      ],
      lastError: null,
      eventCount: 5,
      stalledSince: NOW - 25 * H,
      settledAt: null,
    };
    const out = renderTask(task, c, NOW);
    expect(out).toMatch(/^ {2}stalled\s+since 2026-11-19T11:00:00Z \(25 h ago\)$/m);
    expect(out).not.toMatch(/^ {2}settled/m);
    expect(out).toContain('2 files: 1 uploaded, 1 failed (1 lost), 0 pending');
    expect(out).toMatch(/^lost\.mp4\s+1 KiB\s+lost 500\s+3$/m);
    expect(out).toContain('  upload to storage failed; deleted by the platform at 2026-11-20T10:00:00Z (lost)');
    const failedOnly = renderTask(task, c, NOW, { failed: true });
    expect(failedOnly).toContain('lost.mp4');
    expect(failedOnly).not.toContain('ok.mp4');
    const settled = renderTask({ ...task, stalledSince: null, settledAt: NOW - 60_000 }, c, NOW);
    expect(settled).toMatch(/^ {2}settled\s+2026-11-20T11:59:00Z \(60 s ago\)$/m);
  });

  test('durations in their two largest units', () => {
    expect([45_000, 12 * 60_000, 3 * H + 5 * 60_000, 52 * H].map(durationText)).toEqual([
      '45 s',
      '12 min',
      '3 h 05 min',
      '2 d 4 h',
    ]);
  });
});
