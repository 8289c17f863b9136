// The single table: its keys, indexes and item layout. The CloudFormation resource in infra/ declares
// the same; the local stack and the tests create it from here.
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

export const TTL_ATTRIBUTE = 'expiresAt';
/** Days a raw callback (and a replay claim, a quarantine entry) is kept before the TTL deletes it. */
export const DEFAULT_RAW_EVENT_TTL_DAYS = 90;

export const Index = {
  byRoom: { name: 'byRoom', pk: 'g1pk' },
  bySession: { name: 'bySession', pk: 'g2pk' },
  byAppStatus: { name: 'byAppStatus', pk: 'g3pk' },
  byDay: { name: 'byDay', pk: 'g4pk' },
} as const;

export const SORT_AT = 'sortAt';

/** Item keys. Every item of a task shares the partition `TASK#<id>`: one Query reads a task. */
export const Keys = {
  taskPk: (id: string) => `TASK#${id}`,
  headerSk: '#',
  fileSk: (fileName: string) => `FILE#${fileName}`,
  filePrefix: 'FILE#',
  eventSk: (rank: string) => `EVENT#${rank}`,
  eventPrefix: 'EVENT#',
  quarantinePk: (day: string) => `QUARANTINE#${day}`,
  quarantineSk: (receivedAt: number, messageId: string) => `${String(receivedAt).padStart(16, '0')}#${messageId}`,
  /**
   * A quarantined callback under the task it names, in the bySession index (its keys never begin with
   * SESSION#): one index serves both, where a fifth index would be written for every quarantined callback.
   */
  quarantineTaskGsi: (taskId: string) => `QUARANTINED_TASK#${taskId}`,
  replayPk: (appKey: string, replayKey: string) => `REPLAY#${appKey}#${replayKey}`,
  replaySk: '#',
  roomGsi: (roomId: string) => `ROOM#${roomId}`,
  sessionGsi: (sessionId: string) => `SESSION#${sessionId}`,
  appStatusGsi: (appKey: string, status: string) => `STATUS#${appKey}#${status}`,
  dayGsi: (day: string) => `DAY#${day}`,
} as const;

/** `YYYY-MM-DD` (UTC) of an epoch-millisecond time. */
export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function tableDefinition(tableName: string): CreateTableCommandInput {
  const gsi = (name: string, pk: string) => ({
    IndexName: name,
    KeySchema: [
      { AttributeName: pk, KeyType: 'HASH' as const },
      { AttributeName: SORT_AT, KeyType: 'RANGE' as const },
    ],
    // Keys only: an index is then written only when a task's keys change (status, room, time), not on
    // every callback; listings fetch the headers they need by key.
    Projection: { ProjectionType: 'KEYS_ONLY' as const },
  });
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'sk', AttributeType: 'S' },
      { AttributeName: 'g1pk', AttributeType: 'S' },
      { AttributeName: 'g2pk', AttributeType: 'S' },
      { AttributeName: 'g3pk', AttributeType: 'S' },
      { AttributeName: 'g4pk', AttributeType: 'S' },
      { AttributeName: SORT_AT, AttributeType: 'N' },
    ],
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: Object.values(Index).map((i) => gsi(i.name, i.pk)),
  };
}
