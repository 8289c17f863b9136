// The two ids a message of the FIFO callback queue carries (docs/design.md, "One writer per task"). The group
// makes one task's callbacks reach the worker one batch at a time, in the order they were enqueued; the
// deduplication id lets SQS drop the platform's own resend of a delivery, and nothing else.
import { createHash } from 'node:crypto';
import { compositeKey } from './text.ts';

/** What SendMessage needs on a FIFO queue besides the body. */
export interface FifoIds {
  groupId: string;
  deduplicationId: string;
}

/** Both ids are SHA-256 in hex: 64 characters, within SQS' 128 and its character set whatever the input. */
const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * The group of a task: its appKey and task id, not its service, since a recording and a screenshot task with
 * one id are one task to the store and must share its one writer.
 */
export function taskGroupId(appKey: string, taskId: string): string {
  return sha256Hex(compositeKey('task', appKey, taskId));
}

/**
 * The group of the messages of a task that the worker will set aside without applying (a replay the ingest's
 * claim found, or a callback whose signature did not verify, accepted in mode `report`): apart from the task's
 * own group, so that a flood of them never holds back its genuine callbacks, which no longer wait behind them.
 */
export function setAsideGroupId(appKey: string, taskId: string): string {
  return sha256Hex(compositeKey('aside', appKey, taskId));
}

/**
 * The group of a message that names no task (`messageKey`: what identifies that message, e.g. its id): a
 * group of its own, which no task's group can equal since the hashed parts differ in their first one.
 */
export function ownGroupId(messageKey: string): string {
  return sha256Hex(compositeKey('message', messageKey));
}

/** The signature values of a request as the ingest read them (lib/signature/verify.ts SignatureValues). */
export interface SignatureParts {
  nonce?: string;
  timestamp?: string;
  signature?: string;
  appKey?: string;
}

/**
 * The deduplication id of a callback: its route, its signature values and its exact raw body. Two deliveries
 * share it only when all of these are equal, which is the platform resending one delivery (a duplicate the
 * worker would drop anyway); the same body signed twice (another nonce or timestamp) gets two ids.
 */
export function callbackDeduplicationId(route: string, signature: SignatureParts, rawBody: string): string {
  const { nonce = '', timestamp = '', signature: value = '', appKey = '' } = signature;
  return sha256Hex(compositeKey('callback', route, nonce, timestamp, value, appKey, rawBody));
}

/**
 * The deduplication id of a dead letter sent back to the main queue: one per dead-lettered message, so that
 * a message redriven twice within SQS' five-minute window (a redrive that could not delete it) is enqueued
 * once, while a callback dead-lettered again later, a new message, is redriven again.
 */
export function redriveDeduplicationId(deadLetterMessageId: string): string {
  return sha256Hex(compositeKey('redrive', deadLetterMessageId));
}

/**
 * The deduplication id of an archived callback sent again by a replay (`run`: that replay's own id): one per delivery
 * and run, so that a send the SDK repeats (its answer lost) is enqueued once, while a later replay of the same window
 * sends it again (the worker finds it applied).
 */
export function replayDeduplicationId(run: string, deliveryId: string): string {
  return sha256Hex(compositeKey('replay', run, deliveryId));
}
