// Taking a callback back out of the quarantine (`callbacks quarantine apply`): its body is parsed with
// today's code, its signature checked with today's secrets, and it is applied through the store's
// applyCallback, exactly as the worker applies a queued callback; the store's exactly-once rule makes a
// second recovery a duplicate. The signature's timestamp is judged against the time the callback was
// received, not against now: a callback held for a week is not stale for having waited.
//
// A run takes its entries oldest first, as the worker took them: the worker keeps the first body it sees
// with a signature, so the recovery does too. Of the entries that share a replay key only the earliest
// callback is applied (again, it is a duplicate); another body under that key is a replay, whatever its
// verdict today (the signature does not cover the body, so a forged body replayed under a genuine signature
// verifies as well as the genuine one).
import type { EventPublisher } from '../domain/event-publisher.ts';
import { eventsOfWrite, writeMayPublish, type TaskEvent } from '../domain/task-events.ts';
import type { Callback } from '../domain/callback.ts';
import type { ApplyResult, QuarantineEntry, TaskStore } from '../domain/task-store.ts';
import type { LedgerVerdict, SignatureVerdict } from '../signature/verdicts.ts';
import type { SecretsByAppKey } from '../signature/secrets.ts';
import { hasLeadingZero, replayKeyOf, verifySignature } from '../signature/verify.ts';
import type { SourceAllowList } from '../signature/source-ip.ts';
import { compositeKey, errorSentence } from '../text.ts';
import { parseQueued, toDelivered } from './prepare-record.ts';

export interface RecoverDeps {
  store: TaskStore;
  /** Where the task events of what is applied go, as the worker publishes them; absent, none are. */
  events?: EventPublisher;
  /** Today's secrets; read only when an entry's signature has to be checked again. */
  secrets: () => Promise<SecretsByAppKey>;
  /** The ingest's SIGNATURE_TOLERANCE_S. */
  toleranceS: number;
  /** Apply callbacks whose signature still does not verify, recorded as `accepted_unverified`. */
  acceptUnverified: boolean;
  /**
   * With acceptUnverified: accept only the callbacks whose source IP is in these ranges (an entry whose source
   * IP was not recorded is in none).
   */
  acceptFrom?: SourceAllowList | null;
  /** Only say what would happen. */
  dryRun: boolean;
  now: () => number;
}

export type RecoverResult =
  | { outcome: 'applied' | 'duplicate'; taskId: string; verdict: LedgerVerdict }
  | { outcome: 'would_apply'; taskId: string; verdict: LedgerVerdict }
  | {
      outcome: 'failing';
      taskId: string | null;
      kind: FailingKind;
      why: string;
      /** A replay within the run: the message id of the earlier entry with the same replay key. */
      replayOf?: string;
    };

/** Why a callback stays in the quarantine: its signature, its body, a replay, or what the store refused. */
export type FailingKind = 'signature' | 'body' | 'replay' | 'store';

/** Whether the verdict the ingest recorded leaves the signature to be checked again before applying. */
function needsCheck(entry: QuarantineEntry): boolean {
  if (entry.verdict === 'valid') return false;
  // Signature mode `off` (development stages) checks nothing, so neither does the recovery.
  return !(entry.verdict === 'not_checked' && entry.mode === 'off');
}

function whyUnverified(verdict: SignatureVerdict, entry: QuarantineEntry, appKey: string, toleranceS: number): string {
  switch (verdict) {
    case 'invalid':
      if (entry.signature && hasLeadingZero(entry.signature.timestamp ?? '')) {
        return 'the signature does not verify: its timestamp has a leading zero, which the platform never writes';
      }
      return entry.signature?.appKey !== undefined && entry.signature.appKey !== appKey
        ? `the signature does not verify: the request named appKey "${entry.signature.appKey}", the body "${appKey}"`
        : `the signature does not verify: no secret configured for appKey "${appKey}" reproduces it`;
    case 'missing':
      return entry.signature
        ? 'the signature does not verify: the request lacked a nonce, timestamp or signature'
        : 'the signature cannot be checked: its values were not kept with the callback';
    case 'stale':
      return `the signature's timestamp is more than ${toleranceS} s from the time the callback was received`;
    case 'unknown_app_key':
      return `the signature cannot be checked: no secret is configured for appKey "${appKey}"`;
    default:
      return `the signature does not verify (${verdict})`;
  }
}

/** The replay key an entry's request had (the worker's replay check), from the values kept with it. */
function replayKeyOfEntry(entry: QuarantineEntry): string | null {
  return entry.signature ? replayKeyOf(entry.signature) : null;
}

/**
 * What makes two entries one signed request for the replay rule: the key holds only the signature, and a claim is
 * kept under its appKey, as the worker keeps it.
 */
function replayGroupOf(entry: QuarantineEntry): string | null {
  const key = replayKeyOfEntry(entry);
  return key === null ? null : compositeKey(entry.appKey ?? '', key);
}

/** Whether --source lets an unverified entry be accepted. */
function acceptedFrom(entry: QuarantineEntry, deps: RecoverDeps): boolean {
  return !deps.acceptFrom || deps.acceptFrom.allows(entry.sourceIp ?? undefined);
}

function whyNotAccepted(entry: QuarantineEntry, deps: RecoverDeps): string {
  // The address itself is in the listing; left out here, the entries refused for it count as one cause.
  return entry.sourceIp
    ? `its source IP is outside --source (${deps.acceptFrom?.ranges.join(', ')})`
    : 'its source IP was not recorded, so --source cannot accept it';
}

/** The order a run takes entries in: received first, first; the message id breaks ties. */
function oldestFirst(entries: readonly QuarantineEntry[]): QuarantineEntry[] {
  return [...entries].sort(
    (a, b) => a.receivedAt - b.receivedAt || (a.messageId < b.messageId ? -1 : a.messageId > b.messageId ? 1 : 0),
  );
}

export interface RecoveredEntry {
  entry: QuarantineEntry;
  result: RecoverResult;
}

export interface RecoverAllOptions {
  /**
   * Entries around the run that it does not take (left out by a filter): not applied, but the earliest of
   * them with a replay key makes the run's entries with that key replays.
   */
  around?: readonly QuarantineEntry[];
  /** Told of each entry as it is done. */
  onResult?: (done: RecoveredEntry) => void;
}

/** The event key of an entry's body as today's parse reads it, or null when it does not parse. */
function eventKeyOf(entry: QuarantineEntry): string | null {
  const parsed = parseQueued(entry.service, entry.raw);
  return parsed.ok ? parsed.callback.key : null;
}

/**
 * Whether two entries hold the same callback (the same body, or the same event with its keys reordered, say): a
 * second delivery of one callback under its signature is a duplicate, as for the worker, not a replay.
 */
function sameCallback(a: QuarantineEntry, b: QuarantineEntry): boolean {
  if (a.service !== b.service) return false;
  if (a.raw === b.raw) return true;
  const key = eventKeyOf(a);
  return key !== null && key === eventKeyOf(b);
}

/** The earliest entry of each replay key among these. */
function earliestByReplayKey(entries: readonly QuarantineEntry[]): Map<string, QuarantineEntry> {
  const earliest = new Map<string, QuarantineEntry>();
  for (const entry of oldestFirst(entries)) {
    const key = replayGroupOf(entry);
    if (key !== null && !earliest.has(key)) earliest.set(key, entry);
  }
  return earliest;
}

/**
 * Takes entries out of the quarantine, oldest first, one at a time: each is recovered as recoverEntry does,
 * except an entry with the replay key of an earlier one (of the run or around it) that holds another
 * callback, which is reported as a replay of it and never applied. Secrets that cannot be read stop the run
 * (the error is thrown); any other failure of an entry is its outcome.
 */
export async function recoverAll(
  entries: readonly QuarantineEntry[],
  deps: RecoverDeps,
  opts: RecoverAllOptions = {},
): Promise<RecoveredEntry[]> {
  let secretsFailed = false;
  const secrets = async () => {
    try {
      return await deps.secrets();
    } catch (err) {
      secretsFailed = true;
      throw err;
    }
  };
  const earliest = earliestByReplayKey([...entries, ...(opts.around ?? [])]);
  const done: RecoveredEntry[] = [];
  for (const entry of oldestFirst(entries)) {
    const key = replayGroupOf(entry);
    const first = key === null ? undefined : earliest.get(key);
    let result: RecoverResult;
    if (first && !sameCallback(first, entry)) {
      result = {
        outcome: 'failing',
        taskId: entry.taskId,
        kind: 'replay',
        why: 'a replay: an earlier callback carried the same signature, and only the earliest is applied',
        replayOf: first.messageId,
      };
    } else {
      try {
        result = await recoverEntry(entry, { ...deps, secrets });
      } catch (err) {
        if (secretsFailed) throw err;
        const why = `the write failed: ${errorSentence(err)}`;
        result = { outcome: 'failing', taskId: entry.taskId, kind: 'store', why };
      }
    }
    const recovered = { entry, result };
    done.push(recovered);
    opts.onResult?.(recovered);
  }
  return done;
}

export async function recoverEntry(entry: QuarantineEntry, deps: RecoverDeps): Promise<RecoverResult> {
  if (entry.reason === 'replayed_signature') {
    return {
      outcome: 'failing',
      taskId: entry.taskId,
      kind: 'replay',
      why: 'a replayed signature (seen before with another body) is never applied',
    };
  }
  const parsed = parseQueued(entry.service, entry.raw);
  if (!parsed.ok) {
    return { outcome: 'failing', taskId: entry.taskId, kind: 'body', why: `the body does not parse: ${parsed.detail}` };
  }
  const cb = parsed.callback;
  const signature = await checkSignature(entry, cb, deps);
  if ('outcome' in signature) return signature;
  if (deps.dryRun) return { outcome: 'would_apply', taskId: cb.id, verdict: signature.verdict };
  return applyEntry({ entry, cb, deps, ...signature });
}

/** An entry's signature as today's secrets judge it: the verdict it is applied with, and its replay key. */
interface CheckedSignature {
  verdict: LedgerVerdict;
  /** The replay check of a queued callback, with the values it was received with (null: none). */
  replayKey: string | null;
}

/**
 * The signature checked again where the verdict the ingest recorded leaves it to be (at the time the callback was
 * received), accepted unverified where the run allows; or why the entry stays.
 */
async function checkSignature(
  entry: QuarantineEntry,
  cb: Callback,
  deps: RecoverDeps,
): Promise<CheckedSignature | RecoverResult> {
  if (!needsCheck(entry)) return { verdict: entry.verdict, replayKey: null };
  const checked = verifySignature({
    mode: 'enforce',
    appKey: cb.appKey,
    values: entry.signature ?? {},
    secrets: (await deps.secrets()).get(cb.appKey),
    nowMs: entry.receivedAt,
    toleranceS: deps.toleranceS,
  });
  let verdict: LedgerVerdict;
  if (checked === 'valid') verdict = 'valid';
  else if (deps.acceptUnverified && acceptedFrom(entry, deps)) verdict = 'accepted_unverified';
  else {
    const unverified = whyUnverified(checked, entry, cb.appKey, deps.toleranceS);
    const why = deps.acceptUnverified ? `${unverified}; not accepted: ${whyNotAccepted(entry, deps)}` : unverified;
    return { outcome: 'failing', taskId: cb.id, kind: 'signature', why };
  }
  return { verdict, replayKey: replayKeyOfEntry(entry) };
}

/** One entry being applied: the entry, its callback as parsed today, and its signature as checked. */
interface Recovery extends CheckedSignature {
  entry: QuarantineEntry;
  cb: Callback;
  deps: RecoverDeps;
}

/** Applies the entry's callback through the store, as the worker does, publishes its task events, marks it applied. */
async function applyEntry(r: Recovery): Promise<RecoverResult> {
  const { entry, cb, deps, verdict } = r;
  const at = deps.now();
  const result = await deps.store.applyCallback({
    ...toDelivered(
      {
        messageId: entry.messageId,
        body: entry.raw,
        service: entry.service,
        appKey: cb.appKey,
        receivedAt: entry.receivedAt,
        requestId: entry.requestId,
        verdict: entry.verdict,
        mode: entry.mode ?? 'enforce',
        replayKey: r.replayKey,
        heldSignature: null,
        sender: null,
      },
      cb,
    ),
    verdict,
    recovered: { reason: entry.reason, verdict: entry.verdict, at },
  });
  if (result.outcome === 'quarantined') {
    const kind = result.reason === 'replayed_signature' ? 'replay' : 'store';
    return { outcome: 'failing', taskId: cb.id, kind, why: `${result.reason}: ${result.detail}` };
  }
  const unpublished = await publishEvents(r, result);
  if (unpublished) return unpublished;
  if (!entry.applied) await deps.store.markQuarantineApplied(entry, { at, outcome: result.outcome, verdict });
  return { outcome: result.outcome, taskId: cb.id, verdict };
}

/**
 * The worker's next step: the task events of the write, from what is stored. A duplicate publishes them again (the
 * same ids), so a run whose publishing failed is completed by the next one. Null once they are out.
 */
async function publishEvents(
  { cb, deps }: Recovery,
  result: Extract<ApplyResult, { outcome: 'applied' | 'duplicate' }>,
): Promise<RecoverResult | null> {
  let events: TaskEvent[] = [];
  if (deps.events && result.write && writeMayPublish(cb, result.outcome === 'applied', result.write.file)) {
    const stored = await result.write.readTask();
    events = stored ? eventsOfWrite(cb, stored) : [];
  }
  if (events.length > 0) {
    try {
      await deps.events!.publish(events);
    } catch (err) {
      const why = `applied, but its task events could not be published (${errorSentence(err)}); run again`;
      return { outcome: 'failing', taskId: cb.id, kind: 'store', why };
    }
  }
  return null;
}
