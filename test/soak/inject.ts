// Faults injected into every AWS SDK client of this process, the local stack's deployed handlers included
// (they build their clients inside functions/*.ts, out of reach): the clients' `send` is wrapped on the
// prototype. DynamoDB calls fail at a small random rate, before the request goes out (the write is lost)
// or after it came back (the write is done, the caller sees an error), and fail altogether during an
// outage; SendMessage fails during an SQS outage, so the ingest answers 503 and the sender retries; SNS
// refuses the worker's task-event publishes at the same random rate (the record fails and comes back).
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Random } from '../../devkit/emulator/random.ts';

export interface FaultCounts {
  dynamoCalls: number;
  /** Random errors, by where they struck. */
  dynamoErrorsBefore: number;
  dynamoErrorsAfter: number;
  /** Calls refused while DynamoDB was down. */
  dynamoOutageErrors: number;
  dynamoOutages: number;
  sendMessageOutageErrors: number;
  sqsOutages: number;
  /** Task-event publishes, and those refused. */
  snsCalls: number;
  snsErrors: number;
}

export interface Faults {
  /** Probability that one DynamoDB call fails; 0 turns the random errors off. */
  errorRate: number;
  counts: FaultCounts;
  /** DynamoDB unreachable for `ms`. */
  dynamoOutage(ms: number): void;
  /** SQS SendMessage unreachable for `ms`. */
  sqsOutage(ms: number): void;
  /** Stops every fault (outages in progress end at once). */
  stop(): void;
  uninstall(): void;
}

const injected = (message: string, name: string) =>
  Object.assign(new Error(message), { name, $fault: 'server', $metadata: {} });

type Send = (this: unknown, command: unknown, ...rest: unknown[]) => Promise<unknown>;

export function installFaults(random: Random, errorRate: number): Faults {
  const counts: FaultCounts = {
    dynamoCalls: 0,
    dynamoErrorsBefore: 0,
    dynamoErrorsAfter: 0,
    dynamoOutageErrors: 0,
    dynamoOutages: 0,
    sendMessageOutageErrors: 0,
    sqsOutages: 0,
    snsCalls: 0,
    snsErrors: 0,
  };
  let dynamoDownUntil = 0;
  let sqsDownUntil = 0;
  let stopped = false;

  const dynamoSend = DynamoDBClient.prototype.send as unknown as Send;
  const sqsSend = SQSClient.prototype.send as unknown as Send;
  const snsSend = SNSClient.prototype.send as unknown as Send;
  // `send` is usually inherited from the SDK's base client: restoring then means removing the wrapper.
  const owned = (proto: object) => Object.hasOwn(proto, 'send');
  const dynamoOwned = owned(DynamoDBClient.prototype);
  const sqsOwned = owned(SQSClient.prototype);
  const snsOwned = owned(SNSClient.prototype);
  const restore = (proto: object, original: Send, wasOwned: boolean) => {
    if (wasOwned) (proto as { send: Send }).send = original;
    else delete (proto as { send?: Send }).send;
  };

  const faults: Faults = {
    errorRate,
    counts,
    dynamoOutage(ms) {
      if (stopped) return;
      counts.dynamoOutages += 1;
      dynamoDownUntil = Date.now() + ms;
    },
    sqsOutage(ms) {
      if (stopped) return;
      counts.sqsOutages += 1;
      sqsDownUntil = Date.now() + ms;
    },
    stop() {
      stopped = true;
      dynamoDownUntil = 0;
      sqsDownUntil = 0;
    },
    uninstall() {
      faults.stop();
      restore(DynamoDBClient.prototype, dynamoSend, dynamoOwned);
      restore(SQSClient.prototype, sqsSend, sqsOwned);
      restore(SNSClient.prototype, snsSend, snsOwned);
    },
  };

  (DynamoDBClient.prototype as unknown as { send: Send }).send = async function (
    this: unknown,
    command: unknown,
    ...rest: unknown[]
  ) {
    if (stopped) return dynamoSend.call(this, command, ...rest);
    counts.dynamoCalls += 1;
    if (Date.now() < dynamoDownUntil) {
      counts.dynamoOutageErrors += 1;
      throw injected('connect ECONNREFUSED (injected DynamoDB outage)', 'InjectedOutage');
    }
    if (faults.errorRate > 0 && random.chance(faults.errorRate)) {
      if (random.chance(0.5)) {
        counts.dynamoErrorsBefore += 1;
        throw injected('injected DynamoDB error before the request', 'InternalServerError');
      }
      await dynamoSend.call(this, command, ...rest).catch(() => undefined);
      counts.dynamoErrorsAfter += 1;
      throw injected('injected DynamoDB error after the request', 'InternalServerError');
    }
    return dynamoSend.call(this, command, ...rest);
  } as Send;

  (SQSClient.prototype as unknown as { send: Send }).send = async function (
    this: unknown,
    command: unknown,
    ...rest: unknown[]
  ) {
    if (!stopped && command instanceof SendMessageCommand && Date.now() < sqsDownUntil) {
      counts.sendMessageOutageErrors += 1;
      throw injected('connect ECONNREFUSED (injected SQS outage)', 'InjectedOutage');
    }
    return sqsSend.call(this, command, ...rest);
  } as Send;

  (SNSClient.prototype as unknown as { send: Send }).send = async function (
    this: unknown,
    command: unknown,
    ...rest: unknown[]
  ) {
    if (stopped) return snsSend.call(this, command, ...rest);
    counts.snsCalls += 1;
    if (faults.errorRate > 0 && random.chance(faults.errorRate)) {
      counts.snsErrors += 1;
      throw injected('injected SNS refusal (throttled)', 'Throttled');
    }
    return snsSend.call(this, command, ...rest);
  } as Send;

  return faults;
}
