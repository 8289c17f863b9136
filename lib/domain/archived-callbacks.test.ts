import { archivedCallbacks, archivedSentence, taskHistorySql } from './archived-callbacks.ts';

const DAY = 86_400_000;
const now = Date.UTC(2026, 10, 28, 12);
const task = { service: 'screenshot' as const, appKey: 'app-1', id: 'img-1', firstAt: now - 8 * DAY };

test('a task begun within the retention has all its callbacks in the table: nothing to say', () => {
  expect(archivedCallbacks({ ...task, firstAt: now - 7 * DAY }, now, 7)).toBeNull();
  expect(archivedCallbacks({ ...task, firstAt: now - 7 * DAY - 1 }, now, 7)).not.toBeNull();
  expect(archivedCallbacks(task, now, 30)).toBeNull();
});

test('one begun before: the instant the table keeps callbacks since, and the query of its whole history', () => {
  expect(archivedCallbacks(task, now, 7)).toEqual({
    before: '2026-11-21T12:00:00.000Z',
    query:
      "SELECT received_at, type, file_name, outcome, verdict, body FROM raw WHERE service = 'screenshot' " +
      "AND dt BETWEEN '2026-11-20' AND '2026-11-28' AND app_key = 'app-1' AND task_id = 'img-1' ORDER BY received_at",
  });
});

test('its days start an hour before its first timestamp: a sender clock ahead of ours, around midnight', () => {
  const justAfterMidnight = { ...task, firstAt: Date.UTC(2026, 10, 20, 0, 30) };
  expect(taskHistorySql(justAfterMidnight, now)).toContain("dt BETWEEN '2026-11-19' AND '2026-11-28'");
});

test("ids and appKeys are SQL string literals: a quote in them is doubled, not the query's end", () => {
  const sql = taskHistorySql({ ...task, appKey: "o'brien", id: "img-'); DROP TABLE raw; --" }, now);
  expect(sql).toContain("app_key = 'o''brien' AND task_id = 'img-''); DROP TABLE raw; --' ORDER BY received_at");
});

test('the sentence names the instant and the command with the query', () => {
  const archived = archivedCallbacks(task, now, 7)!;
  expect(archivedSentence(archived)).toBe(
    'Callbacks received before 2026-11-21T12:00:00.000Z are no longer in the table, which keeps them for a while; ' +
      `the archive keeps them all. The task's whole history: callbacks archive query "${archived.query}"`,
  );
});
