// The SQS emulator (fauxqs), started the way the local stack needs it. fauxqs 2.4's startFauxqs falls short
// in three ways this module makes up for:
// - a receive from a FIFO queue hands out one message per message group, where SQS "attempts to return as many
//   messages with the same message group ID as possible" (up to ten): a Lambda batch on AWS usually holds several
//   callbacks of one task, and what the worker does with them (a record given up at its last receive, the later
//   ones of its group) could not happen locally. Here a receive takes, group after group (the group whose first
//   message is oldest first), as many of each group's messages as fit, in order; and a group's messages made
//   visible again go back in their order (fauxqs puts each back at the front, which reverses several);
// - it listens on every interface (0.0.0.0) whatever its `host` option says (that option only names the
//   host in queue URLs): anyone on the network could enqueue messages marked as verified, or read and purge
//   the queue. Here it listens on loopback, unless told otherwise;
// - with a data folder, a message made visible again at once (ChangeMessageVisibility to 0, as
//   `callbacks dlq list` does after its look) has its receive count written as NULL into a NOT NULL column:
//   the call fails (ERR_SQLITE_ERROR) after the message has left the in-flight set and before it is back in
//   the queue, so it is gone until a restart. Made visible again, a message keeps its receive count and its
//   first receive time, as on SQS.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { Server } from 'node:net';
import { startFauxqs, type FauxqsServer } from 'fauxqs';

export type FauxqsOptions = NonNullable<Parameters<typeof startFauxqs>[0]>;

interface Statement {
  run(...params: unknown[]): unknown;
}
interface PersistenceManager {
  db: { prepare(sql: string): Statement };
  updateMessageReady(messageId: string): void;
}

let persistencePatched: Promise<void> | undefined;
let deliveryPatched: Promise<void> | undefined;

interface FifoMessage {
  messageId: string;
  sequenceNumber?: string;
  approximateReceiveCount: number;
  approximateFirstReceiveTimestamp?: number;
  body: string;
  md5OfBody: string;
  md5OfMessageAttributes?: string;
  messageAttributes: Record<string, unknown>;
}
interface FifoQueueState {
  attributes: Record<string, string>;
  fifoMessages: Map<string, FifoMessage[]>;
  fifoLockedGroups: Map<string, number>;
  inflightMessages: Map<string, { message: FifoMessage; receiptHandle: string; visibilityDeadline: number }>;
  persistence?: {
    deleteMessage(id: string): void;
    updateMessageInflight(id: string, handle: string, deadline: number, count: number, first?: number): void;
  };
  processTimers(): void;
  dequeueFifo(
    max: number,
    visibility: number | undefined,
    dlqResolver?: (arn: string) => FifoDlq | undefined,
  ): unknown[];
}
interface FifoDlq {
  enqueue(message: FifoMessage): void;
}

/** A group's messages made visible again are put back at its front one by one: sorted back into their order. */
const RESTORED_AT_MOST = 20;
const bySequence = (a: FifoMessage, b: FifoMessage) =>
  (a.sequenceNumber ?? '') < (b.sequenceNumber ?? '')
    ? -1
    : (a.sequenceNumber ?? '') > (b.sequenceNumber ?? '')
      ? 1
      : 0;

/**
 * Replaces fauxqs' SqsQueue.dequeueFifo (once per process) by SQS FIFO's delivery: as many messages of a group as
 * fit, in order, the group whose first message is oldest first, then the next groups'; a locked group (a message
 * in flight) gives none; a message past maxReceiveCount moves to the dead-letter queue as it is reached.
 */
function deliverAsSqsFifo(): Promise<void> {
  deliveryPatched ??= (async () => {
    const url = new URL('./sqs/sqsStore.js', import.meta.resolve('fauxqs')).href;
    const { SqsQueue } = (await import(url)) as { SqsQueue?: { prototype: FifoQueueState } };
    if (typeof SqsQueue?.prototype.dequeueFifo !== 'function') return;
    SqsQueue.prototype.dequeueFifo = function (this: FifoQueueState, maxCount, visibilityOverride, dlqResolver) {
      this.processTimers();
      const visibility = visibilityOverride ?? Number.parseInt(this.attributes.VisibilityTimeout ?? '30', 10);
      let maxReceiveCount = Number.POSITIVE_INFINITY;
      let dlqArn: string | undefined;
      try {
        const policy = JSON.parse(this.attributes.RedrivePolicy ?? '{}') as Record<string, unknown>;
        maxReceiveCount = Number(policy.maxReceiveCount ?? Number.POSITIVE_INFINITY);
        dlqArn = policy.deadLetterTargetArn as string | undefined;
      } catch {
        // No usable policy: nothing moves to a dead-letter queue.
      }
      const count = Math.min(maxCount, 10);
      const open = [...this.fifoMessages].filter(
        ([group, msgs]) => msgs.length > 0 && !this.fifoLockedGroups.has(group),
      );
      for (const [, msgs] of open) {
        const head = msgs.slice(0, RESTORED_AT_MOST).sort(bySequence);
        msgs.splice(0, head.length, ...head);
      }
      open.sort(([, a], [, b]) => bySequence(a[0]!, b[0]!));
      const result: unknown[] = [];
      for (const [group, msgs] of open) {
        while (result.length < count && msgs.length > 0) {
          const msg = msgs.shift()!;
          msg.approximateReceiveCount++;
          msg.approximateFirstReceiveTimestamp ??= Date.now();
          const dlq = dlqArn && msg.approximateReceiveCount > maxReceiveCount ? dlqResolver?.(dlqArn) : undefined;
          if (dlq) {
            this.persistence?.deleteMessage(msg.messageId);
            dlq.enqueue(msg);
            continue;
          }
          const receiptHandle = randomUUID();
          const visibilityDeadline = Date.now() + visibility * 1000;
          this.inflightMessages.set(receiptHandle, { message: msg, receiptHandle, visibilityDeadline });
          const { approximateReceiveCount: n, approximateFirstReceiveTimestamp: first } = msg;
          this.persistence?.updateMessageInflight(msg.messageId, receiptHandle, visibilityDeadline, n, first);
          result.push({
            MessageId: msg.messageId,
            ReceiptHandle: receiptHandle,
            MD5OfBody: msg.md5OfBody,
            Body: msg.body,
            ...(msg.md5OfMessageAttributes ? { MD5OfMessageAttributes: msg.md5OfMessageAttributes } : {}),
            ...(Object.keys(msg.messageAttributes).length > 0 ? { MessageAttributes: msg.messageAttributes } : {}),
          });
          this.fifoLockedGroups.set(group, (this.fifoLockedGroups.get(group) ?? 0) + 1);
        }
        if (msgs.length === 0) this.fifoMessages.delete(group);
        if (result.length >= count) break;
      }
      return result;
    };
  })();
  return deliveryPatched;
}

/**
 * Replaces fauxqs' PersistenceManager.updateMessageReady (once per process) by one that only clears the
 * in-flight columns. The class is not exported: its module is imported by its file URL, which gives the
 * very module instance fauxqs uses.
 */
function keepReceiveCounts(): Promise<void> {
  persistencePatched ??= (async () => {
    const url = new URL('./persistence.js', import.meta.resolve('fauxqs')).href;
    const { PersistenceManager } = (await import(url)) as {
      PersistenceManager?: { prototype: PersistenceManager };
    };
    if (typeof PersistenceManager?.prototype.updateMessageReady !== 'function') return;
    const statements = new WeakMap<PersistenceManager, Statement>();
    PersistenceManager.prototype.updateMessageReady = function (this: PersistenceManager, messageId: string) {
      let statement = statements.get(this);
      if (!statement) {
        statement = this.db.prepare(
          'UPDATE sqs_messages SET receipt_handle = NULL, visibility_deadline = NULL WHERE message_id = ?',
        );
        statements.set(this, statement);
      }
      statement.run(messageId);
    };
  })();
  return persistencePatched;
}

/** The address a wildcard listen is moved to, inside a startFauxqs call (and nowhere else). */
const listenAddress = new AsyncLocalStorage<string>();
let rebinding = 0;
let originalListen: Server['listen'] | undefined;

/**
 * Runs `start` with every wildcard listen it makes (0.0.0.0 or ::, which fauxqs hard-codes) moved to
 * `address`. fauxqs offers no way to reach its HTTP server before it listens, so net.Server's listen is
 * wrapped for the time of the call; the wrapper acts only within this call's asynchronous context, so
 * servers started meanwhile by other code are left alone.
 */
async function listeningOn<T>(address: string, start: () => Promise<T>): Promise<T> {
  if (rebinding++ === 0) {
    const listen = Server.prototype.listen;
    originalListen = listen;
    Server.prototype.listen = function (this: Server, ...args: unknown[]) {
      const moveTo = listenAddress.getStore();
      const first = args[0] as { host?: unknown } | null | undefined;
      if (moveTo !== undefined && typeof first === 'object' && first !== null) {
        if (first.host === '0.0.0.0' || first.host === '::') args[0] = { ...first, host: moveTo };
      }
      return (listen as (...a: unknown[]) => Server).apply(this, args);
    } as Server['listen'];
  }
  try {
    return await listenAddress.run(address, start);
  } finally {
    if (--rebinding === 0 && originalListen) Server.prototype.listen = originalListen;
  }
}

/** startFauxqs, with the corrections above. `listenOn` defaults to 127.0.0.1. */
export async function startLocalSqs(options: FauxqsOptions & { listenOn?: string }): Promise<FauxqsServer> {
  const { listenOn = '127.0.0.1', ...fauxqsOptions } = options;
  if (fauxqsOptions.dataDir) await keepReceiveCounts();
  await deliverAsSqsFifo();
  return listeningOn(listenOn, () => startFauxqs(fauxqsOptions));
}
