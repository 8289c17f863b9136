// The quarantine listing walks one partition per day: a `since` far back must not make it walk days the table
// can no longer hold (an entry is kept for the retention from its write, at most 14 days after its receipt).
import type { QuarantineEntry } from '../../../domain/task-store.ts';
import { useQuietDynamo } from '../../../../test/support/quiet-dynamo.ts';
import { DynamoTaskStore } from './task-store.ts';

const local = useQuietDynamo();
const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 20, 12);

function entry(receivedAt: number, messageId: string): QuarantineEntry {
  return {
    reason: 'invalid_callback',
    detail: 'not JSON',
    service: 'recording',
    raw: '{',
    receivedAt,
    verdict: 'valid',
    requestId: null,
    messageId,
    appKey: 'app',
    taskId: null,
  };
}

test('a listing from the epoch walks the retention and 14 days only', async () => {
  let queries = 0;
  local.db.client.middlewareStack.add(
    (next, context) => (args) => {
      if (context.commandName === 'QueryCommand') queries++;
      return next(args);
    },
    { step: 'initialize', name: 'countQueries' },
  );
  try {
    const store = new DynamoTaskStore({
      client: local.db.client,
      tableName: local.db.tableName,
      now: () => NOW,
      rawEventTtlDays: 30,
    });
    // The emulator has no TTL: the old entry stays in the table, as it may for a while after it expires.
    await store.quarantine(entry(NOW - 2 * DAY, 'recent'));
    await store.quarantine(entry(NOW - 40 * DAY, 'within-14-days-after'));
    await store.quarantine(entry(NOW - 50 * DAY, 'past-retention'));
    queries = 0;
    const listed: string[] = [];
    for await (const e of store.listQuarantine({ since: 0 })) listed.push(e.messageId);
    expect(listed).toEqual(['recent', 'within-14-days-after']);
    // One query per day of the retention, the 14 days and the day it starts in: not one per day since 1970.
    expect(queries).toBeGreaterThanOrEqual(44);
    expect(queries).toBeLessThanOrEqual(45);
  } finally {
    local.db.client.middlewareStack.remove('countQueries');
  }
});
