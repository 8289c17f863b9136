// Archived callbacks sent back to the callback queue (`callbacks replay`), each exactly as the ingest enqueued it
// (lib/ingest/handle-request.ts): the body as received, the message attributes of what the ingest learned (its
// verdict and signature mode, when it received it, the request id, the appKey, the sender), the message group of
// its task (or the one beside it, for what the worker sets aside), and marked as sent again by a replay (`resentBy`),
// so that the worker logs it as one and notes how it came out. What the archive does not keep is not sent: the
// signature (its replay key, and for a verdict other than `valid` its values), so a replay claims no signature; a
// callback set aside as a replay of a signature goes back claimed `replayed`, to be set aside again.
import { SendMessageBatchCommand, type SendMessageBatchCommandOutput, type SQSClient } from '@aws-sdk/client-sqs';
import { REPLAY_SENDER } from '../../domain/message-notes.ts';
import type { QuarantineReason } from '../../domain/task-store.ts';
import { ownGroupId, replayDeduplicationId, setAsideGroupId, taskGroupId } from '../../fifo-ids.ts';
import { isService } from '../../platform/services.ts';
import { type AttributeValue, Attr, type CallbackMessage, messageAttributes, senderOf } from '../../queue-message.ts';
import { isSetAside, isSignatureMode, isSignatureVerdict } from '../../signature/verdicts.ts';
import { errorSentence } from '../../text.ts';

/** The columns of `raw` a replay reads, as its query answers them. */
export const REPLAYED_COLUMNS = [
  'delivery_id',
  'request_id',
  'app_key',
  'received_at',
  'verdict',
  'mode',
  'outcome',
  'reason',
  'type',
  'task_id',
  'source_ip',
  'user_agent',
  'body',
  'service',
] as const;

/** An archived delivery as a replay reads it: `raw`'s row (its values as the query typed them). */
export type ArchivedDelivery = { [K in (typeof REPLAYED_COLUMNS)[number]]?: unknown };

/** One SendMessage of a replay: what the queue gets. */
export interface ReplayMessage {
  deliveryId: string;
  body: string;
  attributes: Record<string, AttributeValue>;
  groupId: string;
  deduplicationId: string;
}

const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/**
 * The message of an archived delivery, for the replay `run`; a row that cannot be one (no service, no time) throws,
 * saying why.
 */
export function replayMessageOf(row: ArchivedDelivery, run: string): ReplayMessage {
  const deliveryId = text(row.delivery_id);
  const service = row.service;
  const receivedAt = Date.parse(String(row.received_at));
  if (!deliveryId) throw new Error('the row has no delivery_id');
  if (!isService(service)) throw new Error(`delivery ${deliveryId} names no service`);
  if (!Number.isFinite(receivedAt)) throw new Error(`delivery ${deliveryId} has no received_at time`);
  const verdict = isSignatureVerdict(row.verdict) ? row.verdict : 'unverified';
  const mode = isSignatureMode(row.mode) ? row.mode : 'enforce';
  const appKey = typeof row.app_key === 'string' ? row.app_key : '';
  const claim = row.reason === ('replayed_signature' satisfies QuarantineReason) ? 'replayed' : null;
  const message: CallbackMessage = {
    body: typeof row.body === 'string' ? row.body : '',
    service,
    appKey,
    receivedAt,
    requestId: text(row.request_id),
    verdict,
    mode,
    replayKey: null,
    heldSignature: null,
    sender: senderOf(text(row.source_ip) ?? undefined, text(row.user_agent) ?? undefined),
    claim,
  };
  const taskId = text(row.task_id);
  const setAside = isSetAside(mode, verdict) || claim === 'replayed';
  return {
    deliveryId,
    body: message.body,
    attributes: { ...messageAttributes(message), [Attr.resentBy]: { DataType: 'String', StringValue: REPLAY_SENDER } },
    groupId: taskId
      ? setAside
        ? setAsideGroupId(appKey, taskId)
        : taskGroupId(appKey, taskId)
      : ownGroupId(deliveryId),
    deduplicationId: replayDeduplicationId(run, deliveryId),
  };
}

export interface ReplaySendOptions {
  /** Called after each batch, with how many were sent so far. */
  onSent?: (sent: number) => void;
  /** Asked before each batch: true stops the replay there (Ctrl-C). */
  stopped?: () => boolean;
}

export interface ReplaySendResult {
  /** Each message sent, in order, with the id SQS gave it (the worker's note of it is under that id). */
  sent: { deliveryId: string; messageId: string }[];
  /** How many of the messages, from the first, are known sent: the replay continues after them. */
  through: number;
  /** The first message SQS refused, and why; the replay stops at its batch. */
  failed: { deliveryId: string; error: string } | null;
}

/** SendMessageBatch's limit. */
const BATCH = 10;

/**
 * Sends the messages in their order, ten a call (a FIFO queue keeps the order of a group's messages within a call
 * and from one call to the next). The first refusal stops the replay after its call.
 */
export async function sendReplays(
  sqs: SQSClient,
  queueUrl: string,
  messages: readonly ReplayMessage[],
  opts: ReplaySendOptions = {},
): Promise<ReplaySendResult> {
  const result: ReplaySendResult = { sent: [], through: 0, failed: null };
  for (let start = 0; start < messages.length; start += BATCH) {
    if (opts.stopped?.()) break;
    const batch = messages.slice(start, start + BATCH);
    let answer: SendMessageBatchCommandOutput;
    try {
      answer = await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: batch.map((m, i) => ({
            Id: String(i),
            MessageBody: m.body,
            MessageAttributes: m.attributes,
            MessageGroupId: m.groupId,
            MessageDeduplicationId: m.deduplicationId,
          })),
        }),
      );
    } catch (err) {
      result.failed = { deliveryId: batch[0]!.deliveryId, error: errorSentence(err) };
      break;
    }
    const refused = new Map((answer.Failed ?? []).map((f) => [Number(f.Id), f.Message ?? f.Code ?? 'refused']));
    const ids = new Map((answer.Successful ?? []).map((s) => [Number(s.Id), s.MessageId ?? '']));
    batch.forEach((m, i) => {
      const messageId = ids.get(i);
      if (messageId) result.sent.push({ deliveryId: m.deliveryId, messageId });
    });
    const firstRefused = batch.findIndex((_, i) => refused.has(i) || !ids.has(i));
    if (firstRefused >= 0) {
      result.through = start + firstRefused;
      result.failed = {
        deliveryId: batch[firstRefused]!.deliveryId,
        error: refused.get(firstRefused) ?? 'SQS answered nothing for it',
      };
      break;
    }
    result.through = start + batch.length;
    opts.onSent?.(result.sent.length);
  }
  return result;
}
