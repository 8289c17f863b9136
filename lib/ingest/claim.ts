// The replay claim as a step of the ingest (docs/signatures-and-quarantine.md, "Replays"): a signed callback that
// will be applied claims its signature with one conditional write before it is enqueued
// (lib/aws/dynamo/write/delivery-claim.ts), so that of the bodies sent under one signature the first the ingest
// receives is the one applied. The write fails fast, as SendMessage does: a 503 the sender can retry beats an answer
// it never sees; nothing is enqueued without its claim.
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { functionClient } from '../aws/clients.ts';
import { claimDelivery, claimItem, type SignedCallback } from '../aws/dynamo/write/delivery-claim.ts';
import type { ReplayClaim } from '../domain/replay-claim.ts';
import { UnstorableCallbackError } from '../domain/task-store.ts';
import { errorSentence } from '../text.ts';

/** The bounds of one claim, read back included. Worst case before a 503: `deadlineMs`. */
export const claimLimits = {
  /** TCP (and TLS) connection set-up, per attempt. */
  connectionTimeoutMs: 500,
  /** From sending the request to the response headers, per attempt. */
  requestTimeoutMs: 500,
  /** The first try and one retry (a throttled write among them). */
  maxAttempts: 2,
  /** The whole claim: its put, and the read of a claim found taken. */
  deadlineMs: 1000,
} as const;

/** The DynamoDB client of the ingest, with the short time-outs above; `overrides` serve tests and emulators. */
export function createClaimClient(overrides: DynamoDBClientConfig = {}): DynamoDBClient {
  return functionClient(
    new DynamoDBClient({
      maxAttempts: claimLimits.maxAttempts,
      requestHandler: {
        connectionTimeout: claimLimits.connectionTimeoutMs,
        requestTimeout: claimLimits.requestTimeoutMs,
        throwOnRequestTimeout: true,
      },
      ...overrides,
    }),
  );
}

/** What the claim step needs of the ingest's dependencies. */
export interface ClaimDependencies {
  dynamo: DynamoDBClient;
  settings: { tableName: string; rawEventTtlDays: number; claimDeadlineMs: number };
}

/** The claim the callback holds now, or why it has none (DynamoDB cannot hold it; the worker sets it aside). */
export type ClaimOutcome = { claim: ReplayClaim } | { unclaimed: string };

/**
 * Claims the signature of `callback` in the table `settings.tableName` names; rejects when the claim could not be
 * made (the callback is then answered 503 and not enqueued).
 */
export async function claimSignature(deps: ClaimDependencies, callback: SignedCallback): Promise<ClaimOutcome> {
  const { tableName, rawEventTtlDays, claimDeadlineMs } = deps.settings;
  try {
    const built = claimItem(callback, rawEventTtlDays);
    if ('unclaimed' in built) return built;
    return { claim: await claimDelivery(deps.dynamo, tableName, built.item, AbortSignal.timeout(claimDeadlineMs)) };
  } catch (err) {
    // DynamoDB refuses such an item every time: claimed or not, the worker can only set it aside.
    if (err instanceof UnstorableCallbackError || (err as { name?: unknown } | null)?.name === 'ValidationException')
      return { unclaimed: `DynamoDB cannot hold its delivery: ${errorSentence(err)}` };
    throw err;
  }
}
