// The archive's part of a batch: one line per record the worker stored (applied, a duplicate, or set aside), sent
// in one go once the batch's writes are done (lib/domain/archive.ts). A record whose line is not archived fails
// like any other write: it comes again, its writes are found done, and its line goes out again; the copy a
// line may then have is one delivery for the table `raw`.
import type { ArchiveLine, ArchivedOutcome } from '../domain/archive.ts';
import { partitionOf } from '../domain/archive.ts';
import { fileNameOf } from '../domain/task.ts';
import type { QueuedCallback } from '../queue-message.ts';
import { readRecord } from '../queue-message.ts';
import { errorSentence } from '../text.ts';
import type { Applied } from './apply-record.ts';
import type { WorkerDeps } from './deps.ts';
import type { Prepared } from './prepare-record.ts';

/** The line of a stored record, or null for a record that failed (nothing stored, nothing archived). */
function archiveLineOf(p: Prepared, a: Applied, archivedAt: number): ArchiveLine | null {
  if (a.outcome === 'failed') return null;
  const outcome: ArchivedOutcome = a.outcome;
  const read = p.kind === 'unreadable' ? readRecord(p.record) : null;
  const msg: QueuedCallback | null = p.kind === 'unreadable' ? (read?.ok ? read.message : null) : p.msg;
  const messageId = p.kind === 'unreadable' ? p.record.messageId : p.msg.messageId;
  const cb = p.kind === 'apply' ? p.cb : null;
  const appKey = cb?.appKey ?? (p.kind === 'aside' ? p.named.appKey : null) ?? msg?.appKey ?? '';
  const receivedAt =
    msg?.receivedAt ?? (Number(p.kind === 'unreadable' && p.record.attributes?.SentTimestamp) || archivedAt);
  return {
    delivery_id: msg?.requestId ?? messageId,
    message_id: messageId,
    request_id: msg?.requestId ?? null,
    app_key: appKey,
    received_at: new Date(receivedAt).toISOString(),
    archived_at: new Date(archivedAt).toISOString(),
    verdict: msg?.verdict ?? 'unverified',
    mode: msg?.mode ?? 'enforce',
    outcome,
    reason: p.kind === 'aside' ? p.reason : p.kind === 'unreadable' ? 'invalid_callback' : null,
    type: cb?.type ?? bodyType(p),
    task_id: cb?.id ?? (p.kind === 'aside' ? p.named.id : null),
    file_name: cb ? fileNameOf(cb) : null,
    upload_code: cb?.upload ? cb.code : null,
    source_ip: msg?.sender?.sourceIp ?? null,
    user_agent: msg?.sender?.userAgent ?? null,
    resent: msg?.resent === true,
    body: p.kind === 'unreadable' ? (p.record.body ?? '') : p.msg.body,
    partition: partitionOf(msg?.service ?? 'recording', appKey, receivedAt),
  };
}

/** The `type` a body set aside names, when it names a whole number. */
function bodyType(p: Prepared): number | null {
  if (p.kind !== 'aside') return null;
  try {
    const type = (JSON.parse(p.msg.body) as { type?: unknown }).type;
    return Number.isInteger(type) ? (type as number) : null;
  } catch {
    return null;
  }
}

/**
 * Archives the stored records of a batch (one call to the archive); a record whose line is not archived is
 * failed, with its line saying why. Without an archive (deps.archive unset), nothing is done.
 */
export async function archiveBatch(
  prepared: readonly Prepared[],
  applied: readonly Applied[],
  deps: WorkerDeps,
): Promise<void> {
  if (!deps.archive) return;
  const archivedAt = (deps.now ?? Date.now)();
  const stored: { line: ArchiveLine; a: Applied }[] = [];
  prepared.forEach((p, i) => {
    const line = archiveLineOf(p, applied[i]!, archivedAt);
    if (line) stored.push({ line, a: applied[i]! });
  });
  if (stored.length === 0) return;
  let archived: boolean[];
  let error = 'the archive refused the line';
  try {
    archived = await deps.archive.put(stored.map((s) => s.line));
  } catch (err) {
    archived = stored.map(() => false);
    error = errorSentence(err);
  }
  for (const [k, { line, a }] of stored.entries()) {
    if (archived[k]) continue;
    a.log.error('callback_archive_failed', {
      messageId: line.message_id,
      service: line.partition.service,
      appKey: line.app_key,
      outcome: a.outcome,
      error,
    });
    a.outcome = 'failed';
  }
}
