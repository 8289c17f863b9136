// The replay claim, made by the ingest before it enqueues a signed callback (docs/signatures-and-quarantine.md,
// "Replays"). "A signature seen before with another body" is seen before by the receiver: the first body the
// ingest receives under a signature holds it, whatever order the worker meets the callbacks in. The claim is the
// callback's delivery item itself (../table/items.ts: keyed by the appKey and the replay key's digest, holding the
// event key and the raw body, listed in byTaskTime), put on condition that it is absent, so the worker writes no
// delivery for a callback the ingest claimed. A put refused is read back: the same event key is the same callback
// again (a resend), another is a replay. PutItem and GetItem only: the ingest's role grants those two, on delivery
// items alone (infra/roles.yml).
import { Buffer } from 'node:buffer';
import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { parseCallback } from '../../../domain/callback.ts';
import { eventKey } from '../../../domain/canonical.ts';
import type { ReplayClaim } from '../../../domain/replay-claim.ts';
import type { DeliveredCallback } from '../../../domain/task-store.ts';
import type { Service } from '../../../platform/services.ts';
import { bodyRefOf, deliveryToItem, expiresAtFor, type DeliveryOf } from '../table/items.ts';
import { MAX_PARTITION_KEY_BYTES } from '../table/limits.ts';
import { refusalOf } from './refusal.ts';
import { type Item, toItem } from '../table/table-client.ts';
import { Keys } from '../table/table.ts';

/** A signed callback as the ingest has it once its signature's verdict lets it be applied. */
export interface SignedCallback
  extends Pick<DeliveredCallback, 'raw' | 'receivedAt' | 'verdict' | 'mode' | 'requestId'> {
  service: Service;
  /** The body as JSON.parse read it. */
  json: unknown;
  /** What the minimal check read. */
  appKey: string;
  id: string;
  type: number;
  replayKey: string;
}

/**
 * The delivery item that claims the signature, or why there is none: a body nested too deeply to be read, or an
 * appKey too long for a key, which the worker sets aside whatever the claim. A body the write path applies is
 * listed among its task's callbacks, as the worker's delivery would be; one the worker will set aside (the full
 * parse fails, or a value DynamoDB refuses) is stored unlisted, holding the claim all the same.
 */
export function claimItem(c: SignedCallback, ttlDays: number): { item: Item } | { unclaimed: string } {
  const ref = bodyRefOf(c);
  if (Buffer.byteLength(Keys.deliveryPk(c.appKey, ref), 'utf8') > MAX_PARTITION_KEY_BYTES)
    return { unclaimed: 'the appKey is too long for a key' };
  let delivery: DeliveryOf;
  let listed = false;
  try {
    const parsed = parseCallback(c.service, c.json);
    listed = parsed.ok && refusalOf(parsed.callback) === null;
    const named = () => ({ appKey: c.appKey, id: c.id, type: c.type, service: c.service, key: eventKey(c.json) });
    delivery = { ...c, callback: parsed.ok ? parsed.callback : named() };
  } catch (err) {
    // Deeper than the parser and the event key can recurse: the worker sets such a body aside, unread.
    if (err instanceof RangeError) return { unclaimed: 'the body is nested too deeply to be read' };
    throw err;
  }
  return { item: deliveryToItem(delivery, ref, expiresAtFor(c.receivedAt, ttlDays), listed) };
}

/**
 * Puts the delivery if no delivery holds its key; else reads the one that does: `stored` when it holds the same
 * event (this callback again), `replayed` when it holds another. Rejects on any failure of DynamoDB or `signal`.
 */
export async function claimDelivery(
  client: DynamoDBClient,
  tableName: string,
  item: Item,
  signal: AbortSignal,
): Promise<ReplayClaim> {
  try {
    await client.send(
      new PutItemCommand({
        TableName: tableName,
        Item: toItem(item),
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
      { abortSignal: signal },
    );
    return 'stored';
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException)) throw err;
  }
  const { Item: found } = await client.send(
    new GetItemCommand({
      TableName: tableName,
      Key: marshall({ pk: item.pk, sk: item.sk }),
      ConsistentRead: true,
      ProjectionExpression: 'eventKey',
    }),
    { abortSignal: signal },
  );
  const held = found?.eventKey?.S;
  // Absent after a refused put: it expired in between. Rare enough for the sender's retry to settle it.
  if (held === undefined) throw new Error('the replay claim was refused, then not found');
  return held === item.eventKey ? 'stored' : 'replayed';
}
