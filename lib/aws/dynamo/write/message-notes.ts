// The worker's notes of the messages it gave up or that were sent again (lib/domain/message-notes.ts), one small
// item each under `NOTE#<messageId>`, kept 14 days (as long as the dead-letter queue keeps a message). A note of a
// final outcome is never replaced (a conditional put); one of a failure before the last receive is, by the next.
import { ConditionalCheckFailedException, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { MessageNote, MessageNotes } from '../../../domain/message-notes.ts';
import { inParallel } from '../../../in-parallel.ts';
import { noCapacity, type Item, type TableReader } from '../table/table-client.ts';

/** The dead-letter queue's retention: a note outlives the message it explains. */
const NOTE_TTL_S = 14 * 86_400;

const noteKey = (messageId: string) => ({ pk: `NOTE#${messageId}`, sk: '#' });

export class DynamoMessageNotes implements MessageNotes {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;

  constructor(client: DynamoDBClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async write(notes: readonly MessageNote[]): Promise<void> {
    await inParallel(notes, 5, async (note) => {
      const item = { ...noteKey(note.messageId), ...note, expiresAt: Math.floor(note.at / 1000) + NOTE_TTL_S };
      try {
        await this.client.send(
          new PutItemCommand({
            TableName: this.tableName,
            Item: marshall(item, { removeUndefinedValues: true }),
            ConditionExpression: 'attribute_not_exists(pk) OR outcome = :failed',
            ExpressionAttributeValues: marshall({ ':failed': 'failed' }),
          }),
        );
      } catch (err) {
        // A final outcome noted before stays.
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
      }
    });
  }
}

/** The notes of these messages, by message id (those without one left out): one BatchGetItem per 100. */
export async function readMessageNotes(
  table: TableReader,
  messageIds: readonly string[],
): Promise<Map<string, MessageNote>> {
  const found = messageIds.length ? await table.getMany(messageIds.map(noteKey), noCapacity(), false) : [];
  const notes = new Map<string, MessageNote>();
  for (const item of found) if (item) notes.set(String(item.messageId), noteOf(item));
  return notes;
}

function noteOf(item: Item): MessageNote {
  const text = (v: unknown) => (typeof v === 'string' ? v : null);
  const num = (v: unknown) => (typeof v === 'number' ? v : null);
  return {
    messageId: String(item.messageId),
    outcome: item.outcome,
    error: text(item.error),
    at: Number(item.at),
    receiveCount: num(item.receiveCount),
    service: text(item.service),
    appKey: text(item.appKey),
    taskId: text(item.taskId),
    type: num(item.type),
  };
}
