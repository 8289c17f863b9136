// The contract between the ingest function and the worker: the SQS message body is the callback's raw
// body, byte for byte as the platform sent it (after API Gateway's base64 decoding); everything the
// ingest learned about the request travels in message attributes. The one home of the attribute names, of
// writing them (the ingest) and of reading a record back (the worker; the dead-letter commands show them).
import type { SQSRecord } from 'aws-lambda';
import { isService, type Service } from './platform/services.ts';
import { clip } from './text.ts';
import type { HeldSignature, Sender } from './signature/held.ts';
import { REPLAY_CLAIMS, type ReplayClaim } from './domain/replay-claim.ts';
import {
  isSignatureMode,
  isSignatureVerdict,
  type SignatureMode,
  type SignatureVerdict,
} from './signature/verdicts.ts';

const SIGNATURE_FIELDS = ['nonce', 'timestamp', 'signature', 'appKey'] as const;

/** A message attribute holding a JSON object, or null when it is absent or holds anything else. */
function jsonObjectOf(text: string | undefined): Record<string, unknown> | null {
  if (!text) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : null;
}

/** The held signature values of a message, or null when absent or not of the expected shape. */
function readHeldSignature(text: string | undefined): HeldSignature | null {
  const raw = jsonObjectOf(text);
  if (raw === null) return null;
  const from = (typeof raw.from === 'object' && raw.from !== null ? raw.from : {}) as Record<string, unknown>;
  const held: HeldSignature = { from: {} };
  for (const field of SIGNATURE_FIELDS) {
    if (typeof raw[field] === 'string') held[field] = raw[field];
    if (from[field] === 'query' || from[field] === 'header') held.from[field] = from[field];
  }
  return held;
}

/** The replay claim of a message, or null when absent or unknown (a message the ingest did not claim). */
function readClaim(text: string | undefined): ReplayClaim | null {
  return REPLAY_CLAIMS.find((claim) => claim === text) ?? null;
}

/** SQS message attribute names (all String unless noted). */
export const Attr = {
  service: 'service',
  appKey: 'appKey',
  /** Number: epoch milliseconds when the ingest received the request. */
  receivedAt: 'receivedAt',
  requestId: 'requestId',
  verdict: 'signatureVerdict',
  mode: 'signatureMode',
  /**
   * SHA-256 (hex) of the lower-cased signature, when nonce, timestamp and signature were all present: the
   * worker's replay check (replayKeyOf). Opaque to the worker; never the signature itself.
   */
  replayKey: 'replayKey',
  /**
   * Set on a message sent again by someone other than the ingest (`callbacks dlq redrive`, `callbacks replay`): it
   * names who. A message sent again has a new sequence number, so what an earlier copy of it wrote is charged by a
   * recount.
   */
  resentBy: 'resentBy',
  /** JSON HeldSignature, only when the verdict is not `valid`. */
  signatureValues: 'signatureValues',
  /**
   * JSON Sender: the request's source IP and user agent, kept with a quarantined callback. One attribute for
   * both, since SQS takes at most ten per message.
   */
  sender: 'sender',
  /**
   * The ingest's replay claim (ReplayClaim, lib/domain/replay-claim.ts), only on a callback it claimed: `stored`, its
   * delivery is stored; `replayed`, the signature came before with another body and the worker sets it aside.
   */
  claim: 'replayClaim',
} as const;

/** The longest source IP kept (an IPv6 address with a zone fits); longer is not an address. */
const MAX_SOURCE_IP_CHARS = 64;
/** The longest user agent kept: enough to tell senders apart, small beside the 64 KiB body. */
export const MAX_USER_AGENT_CHARS = 256;

/**
 * The Sender of a request, or null when nothing is known: values SQS could not carry are left out, an
 * overlong source IP too (it is no address), a user agent is cut to MAX_USER_AGENT_CHARS.
 */
export function senderOf(sourceIp: string | undefined, userAgent: string | undefined): Sender | null {
  const sender: Sender = {};
  const ip = sourceIp?.trim();
  if (ip && ip.length <= MAX_SOURCE_IP_CHARS && isQueueSafe(ip)) sender.sourceIp = ip;
  const agent = userAgent === undefined ? '' : clip(userAgent, MAX_USER_AGENT_CHARS);
  if (agent !== '' && isQueueSafe(agent)) sender.userAgent = agent;
  return sender.sourceIp === undefined && sender.userAgent === undefined ? null : sender;
}

/** The Sender of a message, or null when absent or not of the expected shape. */
export function readSender(text: string | undefined): Sender | null {
  const parsed = jsonObjectOf(text);
  if (parsed === null) return null;
  const { sourceIp, userAgent } = parsed;
  return senderOf(
    typeof sourceIp === 'string' ? sourceIp : undefined,
    typeof userAgent === 'string' ? userAgent : undefined,
  );
}

/** What the ingest enqueues for one accepted callback. */
export interface CallbackMessage {
  /** The callback body exactly as received (after base64 decoding). */
  body: string;
  service: Service;
  appKey: string;
  receivedAt: number;
  requestId: string | null;
  verdict: SignatureVerdict;
  mode: SignatureMode;
  /** See replayKeyOf (lib/signature/verify.ts). */
  replayKey: string | null;
  /** Only for a verdict other than `valid`: what a later check of the signature needs. */
  heldSignature?: HeldSignature | null;
  /** The request's source IP and user agent, when known. */
  sender?: Sender | null;
  /**
   * The ingest's replay claim, when it made one (a signed callback to be applied); without one (a message of a test,
   * of `quarantine apply`), the worker claims the signature itself.
   */
  claim?: ReplayClaim | null;
}

// Characters SQS accepts in a message body or a String attribute: #x9 | #xA | #xD | #x20-#xD7FF |
// #xE000-#xFFFD | #x10000-#x10FFFF. Anything else makes SendMessage fail for good, not transiently.
const outsideSqsCharacters = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/** Whether SQS can carry this text in a message body or an attribute. */
export function isQueueSafe(text: string): boolean {
  return !outsideSqsCharacters.test(text);
}

/** A message attribute as SendMessage takes it (the SDK's MessageAttributeValue). */
export interface AttributeValue {
  DataType: 'String' | 'Number';
  StringValue: string;
}

const text = (value: string): AttributeValue => ({ DataType: 'String', StringValue: value });

/** The message attributes of a callback message. */
export function messageAttributes(message: CallbackMessage): Record<string, AttributeValue> {
  const attributes: Record<string, AttributeValue> = {
    [Attr.service]: text(message.service),
    [Attr.appKey]: text(message.appKey),
    [Attr.receivedAt]: { DataType: 'Number', StringValue: String(message.receivedAt) },
    [Attr.verdict]: text(message.verdict),
    [Attr.mode]: text(message.mode),
  };
  // SQS refuses empty attribute values: absent ones are left out.
  if (message.requestId) attributes[Attr.requestId] = text(message.requestId);
  if (message.replayKey) attributes[Attr.replayKey] = text(message.replayKey);
  if (message.heldSignature) {
    const held = JSON.stringify(message.heldSignature);
    // Values SQS cannot carry never come from the platform; without them the callback can only be taken
    // out of the quarantine unverified.
    if (isQueueSafe(held)) attributes[Attr.signatureValues] = text(held);
  }
  if (message.sender) attributes[Attr.sender] = text(JSON.stringify(message.sender));
  if (message.claim) attributes[Attr.claim] = text(message.claim);
  return attributes;
}

/** What the worker reads back from one SQS record. */
export interface QueuedCallback extends CallbackMessage {
  messageId: string;
  /** The signature values, kept only when the verdict is not `valid`. */
  heldSignature: HeldSignature | null;
  sender: Sender | null;
  /** SQS ApproximateReceiveCount, when known. */
  receiveCount?: number;
  /**
   * Sent to the queue again after the ingest's own send: by a redrive out of the dead-letter queue (ours, which
   * says so in `resentBy`, or SQS's, which gives the copy a new SentTimestamp long after the ingest received it), or
   * by a replay out of the archive.
   */
  resent?: boolean;
  /** Who sent it again, as `resentBy` names them (`dlq-redrive`, `archive-replay`); absent when nobody says. */
  resentBy?: string;
}

/**
 * A message sent this long after the ingest received its request was sent again: the ingest sends within its own
 * time-out (seconds), and a message reaches the dead-letter queue only after maxReceiveCount visibility time-outs.
 */
const RESENT_AFTER_MS = 60_000;

export type ReadRecordResult = { ok: true; message: QueuedCallback } | { ok: false; reason: string };

/**
 * Turns one SQS record (as Lambda delivers it) into what the ingest put in it. Without a known service the
 * body cannot be read; any other attribute missing or unknown gets the value that trusts it least.
 */
export function readRecord(record: SQSRecord): ReadRecordResult {
  const attr = (name: string): string | undefined => record.messageAttributes?.[name]?.stringValue ?? undefined;
  const service = attr(Attr.service);
  if (!isService(service)) return { ok: false, reason: `message attribute ${Attr.service} is missing or unknown` };
  const verdict = attr(Attr.verdict);
  const mode = attr(Attr.mode);
  const receivedAtRaw = Number(attr(Attr.receivedAt));
  const sentAt = Number(record.attributes?.SentTimestamp);
  const resentBy = attr(Attr.resentBy);
  return {
    ok: true,
    message: {
      messageId: record.messageId,
      body: record.body,
      service,
      appKey: attr(Attr.appKey) ?? '',
      receivedAt:
        Number.isFinite(receivedAtRaw) && receivedAtRaw > 0
          ? receivedAtRaw
          : Number.isFinite(sentAt)
            ? sentAt
            : Date.now(),
      requestId: attr(Attr.requestId) ?? null,
      // No verdict (a message the ingest did not write): nobody vouched for it.
      verdict: isSignatureVerdict(verdict) ? verdict : 'unverified',
      mode: isSignatureMode(mode) ? mode : 'enforce',
      replayKey: attr(Attr.replayKey) ?? null,
      heldSignature: readHeldSignature(attr(Attr.signatureValues)),
      sender: readSender(attr(Attr.sender)),
      claim: readClaim(attr(Attr.claim)),
      receiveCount: Number(record.attributes?.ApproximateReceiveCount) || undefined,
      resent:
        resentBy !== undefined ||
        (Number.isFinite(receivedAtRaw) && Number.isFinite(sentAt) && sentAt - receivedAtRaw > RESENT_AFTER_MS),
      ...(resentBy !== undefined ? { resentBy } : {}),
    },
  };
}
