// `callbacks migrate`, for headers written before room and session index keys held the appKey: their keys
// rewritten to those this version writes, so that the listings of a room or session of one appKey find them.
import { ConditionalCheckFailedException, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { Key, TableClient } from './table-client.ts';

/** A header whose index keys are to be rewritten. */
export interface RekeyedHeader {
  key: Key;
  /** The index keys it holds, and those it should. */
  held: { g1pk?: string; g2pk?: string };
  wanted: { g1pk?: string; g2pk?: string };
}

/**
 * A header's room and session index keys set to those it should hold, provided it still holds those it
 * was found with (a worker that wrote the header since wrote the right ones). True when rewritten.
 */
export async function rekey(table: TableClient, header: RekeyedHeader): Promise<boolean> {
  const set: string[] = [];
  const remove: string[] = [];
  const conditions: string[] = [];
  const values: Record<string, string> = {};
  for (const attr of ['g1pk', 'g2pk'] as const) {
    const held = header.held[attr];
    const wanted = header.wanted[attr];
    conditions.push(held === undefined ? `attribute_not_exists(${attr})` : `${attr} = :held_${attr}`);
    if (held !== undefined) values[`:held_${attr}`] = held;
    if (wanted === undefined) remove.push(attr);
    else {
      set.push(`${attr} = :wanted_${attr}`);
      values[`:wanted_${attr}`] = wanted;
    }
  }
  const update = [set.length ? `SET ${set.join(', ')}` : '', remove.length ? `REMOVE ${remove.join(', ')}` : '']
    .filter(Boolean)
    .join(' ');
  try {
    await table.client.send(
      new UpdateItemCommand({
        TableName: table.table,
        Key: marshall(header.key),
        UpdateExpression: update,
        ConditionExpression: `attribute_exists(pk) AND ${conditions.join(' AND ')}`,
        ExpressionAttributeValues: marshall(values),
      }),
    );
    return true;
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) return false;
    throw err;
  }
}
