// The single table: its keys, indexes and item layout (docs/task-store.md). The CloudFormation resource in
// infra/ declares the same; the local stack and the tests create it from here.
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

/**
 * Days a raw callback (and a replay claim, a quarantine entry) is kept before the TTL deletes it: long enough for
 * the read API, a quarantine to be looked at and applied, and a replay claim to outlive every resend; the archive
 * keeps them all (docs/archive.md).
 */
export const DEFAULT_RAW_EVENT_TTL_DAYS = 7;

export const Index = {
  byRoom: { name: 'byRoom', pk: 'g1pk' },
  bySession: { name: 'bySession', pk: 'g2pk' },
  // Keyed by appKey alone (a task's status is computed on read); the name is the one deployed tables have.
  byApp: { name: 'byAppStatus', pk: 'g3pk' },
  byDay: { name: 'byDay', pk: 'g4pk' },
} as const;

export const SORT_AT = 'sortAt';

/**
 * A task's raw callbacks in timestamp order: a sparse index of the delivery items, `g5pk` = the task, `g5sk` =
 * the callback's rank (its timestamp zero-padded, then its event key). It projects the whole item, so that a page of
 * callbacks is one Query: a delivery under 1 KB costs one index write unit whatever the projection.
 */
export const EventsIndex = { name: 'byTaskTime', pk: 'g5pk', sk: 'g5sk' } as const;

/**
 * The part of a key that names an appKey: its length, then the appKey, so that no appKey's keys can run
 * into another's whatever characters they hold (`3:abc#…` can only be appKey `abc`).
 */
export const scopeOf = (appKey: string) => `${appKey.length}:${appKey}`;

/** The appKey and the rest of a sort key that starts with `<prefix><scope>` (`H#`, `P#`). */
export function readScope(sk: string, prefix: string): { appKey: string; rest: string } {
  const colon = sk.indexOf(':', prefix.length);
  const length = Number(sk.slice(prefix.length, colon));
  const appKey = sk.slice(colon + 1, colon + 1 + length);
  return { appKey, rest: sk.slice(colon + 1 + length) };
}

/**
 * How every delivery's partition key begins, and no other item's: the ingest's role may name no other
 * (infra/roles.yml, `dynamodb:LeadingKeys`).
 */
export const DELIVERY_PREFIX = 'DLV#';

/**
 * Item keys. Every item of a task shares the partition `TASK#<id>`, whatever its appKey: one Query of
 * the `H#` sort keys finds every appKey that has a task with this id, another reads one task's parts.
 */
export const Keys = {
  taskPk: (id: string) => `TASK#${id}`,
  headerSk: (appKey: string) => `H#${scopeOf(appKey)}`,
  headerPrefix: 'H#',
  /** Every part of one task other than its header: files and recorded callback keys. */
  partsPrefix: (appKey: string) => `P#${scopeOf(appKey)}#`,
  fileSk: (appKey: string, fileName: string) => `P#${scopeOf(appKey)}#F#${fileName}`,
  /**
   * A callback key recorded on an item of its own, once its file holds as many keys as it keeps inline:
   * the keys of one file sort together (its name length-prefixed, so that no name runs into another's).
   */
  recordedPrefix: (appKey: string, fileName: string) => `P#${scopeOf(appKey)}#K#${fileName.length}:${fileName}#`,
  recordedSk: (appKey: string, fileName: string, eventKey: string) =>
    `P#${scopeOf(appKey)}#K#${fileName.length}:${fileName}#${eventKey}`,
  /** A delivery: the replay claim and the raw body, keyed by the replay key's digest, or the event key. */
  deliveryPk: (appKey: string, ref: string) => `${DELIVERY_PREFIX}${scopeOf(appKey)}#${ref}`,
  deliverySk: '#',
  quarantinePk: (day: string) => `QUARANTINE#${day}`,
  quarantineSk: (receivedAt: number, messageId: string) => `${String(receivedAt).padStart(16, '0')}#${messageId}`,
  /**
   * A quarantined callback under the task it names, in the bySession index (its keys never begin with
   * SESSION#): one index serves both, where a fifth index would be written for every quarantined callback.
   */
  quarantineTaskGsi: (taskId: string) => `QUARANTINED_TASK#${taskId}`,
  /**
   * A room and a session are named by each appKey for itself: their index keys hold the appKey, so that
   * a listing of one appKey's room reads no index entry of another appKey's room of the same name.
   */
  roomGsi: (appKey: string, roomId: string) => `ROOM#${scopeOf(appKey)}#${roomId}`,
  sessionGsi: (appKey: string, sessionId: string) => `SESSION#${scopeOf(appKey)}#${sessionId}`,
  appGsi: (appKey: string) => `APP#${appKey}`,
  dayGsi: (day: string) => `DAY#${day}`,
  /** The partition of a task's callbacks in the byTaskTime index. */
  eventsGsi: (appKey: string, taskId: string) => `EV#${scopeOf(appKey)}#${taskId}`,
  /**
   * A file's check in its storage, beside the task's parts (after them: no read of a task's parts meets it), in
   * the file's own order; and the task's checked files counted by state. Written by the verifier only.
   */
  verificationPrefix: (appKey: string) => `V#${scopeOf(appKey)}#F#`,
  verificationSk: (appKey: string, fileName: string) => `V#${scopeOf(appKey)}#F#${fileName}`,
  verificationCountsSk: (appKey: string) => `V#${scopeOf(appKey)}#S`,
  /** Each storage whose uploads failed, with its window of failures and its open incident: one small partition. */
  storagesPk: 'STORAGES',
  storageSk: (appKey: string, storage: string) => `${scopeOf(appKey)}#${storage}`,
  /** A storage's failed uploads, by their first failure, and its incidents, by the first failure of their window. */
  failuresPk: (appKey: string, storage: string) => `FAILS#${scopeOf(appKey)}#${storage}`,
  failureSk: (at: number, taskId: string, fileName: string) =>
    `${String(Math.max(0, Math.trunc(at))).padStart(16, '0')}#${taskId.length}:${taskId}#${fileName}`,
  incidentsPk: (appKey: string, storage: string) => `INCIDENT#${scopeOf(appKey)}#${storage}`,
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
    // Keys only, on task headers only: an index is written when a task is created and when its identity
    // improves, never by the callbacks that follow; listings fetch the headers they need by key.
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
      { AttributeName: EventsIndex.pk, AttributeType: 'S' },
      { AttributeName: EventsIndex.sk, AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: [
      ...Object.values(Index).map((i) => gsi(i.name, i.pk)),
      {
        IndexName: EventsIndex.name,
        KeySchema: [
          { AttributeName: EventsIndex.pk, KeyType: 'HASH' as const },
          { AttributeName: EventsIndex.sk, KeyType: 'RANGE' as const },
        ],
        Projection: { ProjectionType: 'ALL' as const },
      },
    ],
  };
}
