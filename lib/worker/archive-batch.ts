// The archive's part of a batch: one line per record the worker stored (applied, a duplicate, or set aside), sent
// in one go once the batch's writes are done (lib/domain/archive.ts). A record whose line is not archived fails
// like any other write: it comes again, its writes are found done, and its line goes out again; the copy a
// line may then have is one delivery for the table `raw`.
import type { ArchiveLine, ArchivedOutcome } from '../domain/archive.ts';
import { partitionOf } from '../domain/archive.ts';
import type { BatchRecord } from '../domain/batch.ts';
import { fileNameOf } from '../domain/task.ts';
import { errorSentence } from '../text.ts';
import type { WorkerDeps } from './deps.ts';

/** The line of a stored record, or null for a record that failed (nothing stored, nothing archived). */
function archiveLineOf(r: BatchRecord, archivedAt: number): ArchiveLine | null {
  if (r.outcome === 'failed') return null;
  const outcome: ArchivedOutcome = r.outcome;
  const p = r.parsed;
  // What the ingest received and said of it: the delivered callback's, or the quarantine entry's.
  const got =
    p.kind === 'apply'
      ? { ...p.delivered, verdict: p.delivered.verdict === 'accepted_unverified' ? 'unverified' : p.delivered.verdict }
      : { ...p.entry, sender: { sourceIp: p.entry.sourceIp ?? null, userAgent: p.entry.userAgent ?? null } };
  const cb = p.kind === 'apply' ? p.callback : null;
  const appKey = cb?.appKey ?? (p.kind === 'aside' ? p.entry.appKey : null) ?? '';
  const service = cb?.service ?? (p.kind === 'aside' ? p.entry.service : 'recording');
  return {
    delivery_id: got.requestId ?? r.messageId,
    message_id: r.messageId,
    request_id: got.requestId ?? null,
    app_key: appKey,
    received_at: new Date(got.receivedAt).toISOString(),
    archived_at: new Date(archivedAt).toISOString(),
    verdict: got.verdict,
    mode: got.mode ?? 'enforce',
    outcome,
    reason: p.kind === 'aside' ? p.entry.reason : null,
    type: cb?.type ?? bodyType(r),
    task_id: cb?.id ?? (p.kind === 'aside' ? p.entry.taskId : null),
    file_name: cb ? fileNameOf(cb) : null,
    upload_code: cb?.upload ? cb.code : null,
    source_ip: got.sender?.sourceIp ?? null,
    user_agent: got.sender?.userAgent ?? null,
    resent: r.resent,
    body: got.raw,
    partition: partitionOf(service, appKey, got.receivedAt),
  };
}

/** The `type` a body set aside names, when it names a whole number. */
function bodyType(r: BatchRecord): number | null {
  if (r.parsed.kind !== 'aside') return null;
  try {
    const type = (JSON.parse(r.parsed.entry.raw) as { type?: unknown }).type;
    return Number.isInteger(type) ? (type as number) : null;
  } catch {
    return null;
  }
}

/**
 * Archives the stored records of a batch (one call to the archive); a record whose line is not archived is
 * failed, with its line saying why. Without an archive (deps.archive unset), nothing is done.
 */
export async function archiveBatch(records: readonly BatchRecord[], deps: WorkerDeps): Promise<void> {
  if (!deps.archive) return;
  const archivedAt = (deps.now ?? Date.now)();
  const stored: { line: ArchiveLine; r: BatchRecord }[] = [];
  for (const r of records) {
    const line = archiveLineOf(r, archivedAt);
    if (line) stored.push({ line, r });
  }
  if (stored.length === 0) return;
  let archived: boolean[];
  let error = 'the archive refused the line';
  try {
    archived = await deps.archive.put(stored.map((s) => s.line));
  } catch (err) {
    archived = stored.map(() => false);
    error = errorSentence(err);
  }
  for (const [k, { line, r }] of stored.entries()) {
    if (archived[k]) continue;
    r.log.error('callback_archive_failed', {
      messageId: line.message_id,
      service: line.partition.service,
      appKey: line.app_key,
      outcome: r.outcome,
      error,
    });
    Object.assign(r, { outcome: 'failed', error: `its line could not be archived: ${error}` });
  }
}
