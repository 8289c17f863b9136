// The exactly-once write path. A task is a partition `TASK#<id>` holding a header item, one item per file
// and one item per distinct callback (the ledger, with the raw body). Each item of state is a join of
// facts (lib/domain/task.ts), written with optimistic concurrency (read, join, put if the version is
// unchanged). Counts stay exact under redelivery and crashes because every item remembers, as a token,
// which callbacks it has absorbed until the callback's ledger entry exists; the ledger entry is written
// last, so its existence means the callback reached every item. Tokens of finished callbacks are pruned
// by later writes, so no item grows with the number of callbacks. See README "Worker and table design".
import type { Callback } from '../../domain/callback.ts';
import type { ApplyResult, Capacity, DeliveredCallback, QuarantineEntry } from '../../domain/task-store.ts';
import {
  applyToFile,
  applyToHeader,
  deriveStatus,
  fileNameOf,
  fileState,
  rankOf,
  type FileTransition,
  type TaskStatus,
} from '../../domain/task.ts';
import { fileFromItem, fileToItem, headerFromItem, headerToItem, holdsToken, type FileToken } from './items.ts';
import { oversizedKey, tooDeep } from './limits.ts';
import { ContentionError, backoff, noCapacity, type Item, type Key, type TableClient } from './table-client.ts';
import { Keys, dayOf } from './table.ts';

export interface WritePathOptions {
  /** Days a raw callback is kept before the TTL deletes it. */
  ttlDays: number;
  now: () => number;
  /** Tokens an item may hold before a write checks which of them can go. */
  pruneThreshold: number;
  /** Optimistic-concurrency attempts before giving up with a retryable error. */
  maxAttempts: number;
}

export class WritePath {
  private readonly table: TableClient;
  private readonly opts: WritePathOptions;

  constructor(table: TableClient, opts: WritePathOptions) {
    this.table = table;
    this.opts = opts;
  }

  async applyCallback(d: DeliveredCallback): Promise<ApplyResult> {
    const cap = noCapacity();
    const cb = d.callback;
    const pk = Keys.taskPk(cb.id);
    const rank = rankOf(cb.timestamp, cb.key);
    const eventKey: Key = { pk, sk: Keys.eventSk(rank) };
    const headerKey: Key = { pk, sk: Keys.headerSk };
    const fileName = fileNameOf(cb);
    const fileKey: Key | null = fileName ? { pk, sk: Keys.fileSk(fileName) } : null;

    const oversized = oversizedKey(cb, d.signatureKey) ?? tooDeep(cb);
    if (oversized) {
      // DynamoDB refuses such a write every time: retrying would only end in the dead-letter queue.
      await this.quarantineParsed(d, 'invalid_callback', oversized, cap);
      return { outcome: 'quarantined', reason: 'invalid_callback', detail: oversized, capacity: cap };
    }

    if (d.signatureKey && !(await this.claimSignature(cb, d.signatureKey, cap))) {
      const detail = 'this nonce, timestamp and signature came before with a different body';
      await this.quarantineParsed(d, 'replayed_signature', detail, cap);
      return { outcome: 'quarantined', reason: 'replayed_signature', detail, capacity: cap };
    }

    for (let attempt = 1; ; attempt++) {
      if (attempt > this.opts.maxAttempts)
        throw new ContentionError(`task ${cb.id} stayed contended after ${this.opts.maxAttempts} attempts`);
      if (attempt > 1) await backoff(attempt);

      const [fileItem, headerItem] = await this.table.getMany(fileKey ? [fileKey, headerKey] : [headerKey], cap);
      const file = fileKey ? (fileItem ?? null) : null;
      const header = fileKey ? (headerItem ?? null) : (fileItem ?? null);

      if (header && header.service !== cb.service) {
        const detail = `task ${cb.id} is a ${header.service} task; this is a ${cb.service} callback`;
        await this.quarantineParsed(d, 'service_mismatch', detail, cap);
        return { outcome: 'quarantined', reason: 'service_mismatch', detail, capacity: cap };
      }

      const fileHasToken = holdsToken(file, cb.key);
      const headerHasToken = holdsToken(header, cb.key);
      const inEveryItem = (!fileKey || fileHasToken) && headerHasToken;
      // The ledger is read after the items it guards: if a token was pruned before those reads, the
      // ledger entry already existed, so this reads it and stops (see the module comment).
      if (!inEveryItem && (await this.table.exists(eventKey, cap))) return { outcome: 'duplicate', capacity: cap };

      let transition: FileTransition | null = null;
      if (fileKey) {
        if (fileHasToken) {
          const t = file!.inflight[cb.key] as FileToken;
          transition = { from: t.f ?? null, to: t.t ?? null };
        } else {
          const before = file ? fileFromItem(file) : null;
          const after = applyToFile(before, cb);
          transition = { from: fileState(before), to: fileState(after) };
          const inflight = await this.pruneTokens(pk, file?.inflight, cap);
          inflight[cb.key] = { ts: cb.timestamp, f: transition.from, t: transition.to } satisfies FileToken;
          const written = await this.table.putVersioned(fileToItem(fileKey, cb, after, inflight), file?.ver, cap);
          if (!written) continue;
        }
      }

      let status = header?.status as TaskStatus;
      if (!headerHasToken) {
        const applied = await this.applyHeader(headerKey, header, cb, transition, eventKey, cap);
        if (applied === 'conflict') continue;
        if (applied === 'duplicate') return { outcome: 'duplicate', capacity: cap };
        status = applied.status;
      }

      const created = await this.putLedgerEntry(eventKey, d, fileName, cap);
      // Both items held the token and another delivery wrote the ledger entry first: nothing was new.
      if (!created && inEveryItem) return { outcome: 'duplicate', capacity: cap };
      return { outcome: 'applied', transition, status, capacity: cap };
    }
  }

  /** Joins the callback into the header, retrying on conflicts without redoing the file. */
  private async applyHeader(
    headerKey: Key,
    header: Item | null,
    cb: Callback,
    transition: FileTransition | null,
    eventKey: Key,
    cap: Capacity,
  ): Promise<{ status: TaskStatus } | 'duplicate' | 'conflict'> {
    let current = header;
    for (let attempt = 1; attempt <= this.opts.maxAttempts; attempt++) {
      if (attempt > 1) {
        await backoff(attempt);
        current = await this.table.get(headerKey, cap);
        if (holdsToken(current, cb.key)) return { status: current!.status };
        if (current && current.service !== cb.service) return 'conflict';
        if (await this.table.exists(eventKey, cap)) return 'duplicate';
      }
      const before = current ? headerFromItem(current) : null;
      const after = applyToHeader(before, cb, transition);
      const inflight = await this.pruneTokens(headerKey.pk, current?.inflight, cap);
      inflight[cb.key] = cb.timestamp;
      if (await this.table.putVersioned(headerToItem(headerKey, after, inflight), current?.ver, cap))
        return { status: deriveStatus(after) };
    }
    throw new ContentionError(`task ${cb.id} header stayed contended after ${this.opts.maxAttempts} attempts`);
  }

  /** Drops the tokens of callbacks whose ledger entry exists: they can never be applied again. */
  private async pruneTokens(
    pk: string,
    inflight: Record<string, any> | undefined,
    cap: Capacity,
  ): Promise<Record<string, any>> {
    const tokens = { ...(inflight ?? {}) };
    const keys = Object.keys(tokens);
    if (keys.length < this.opts.pruneThreshold) return tokens;
    // A token is the callback's key and timestamp: together they name its ledger entry.
    const timestampOf = (k: string) => (typeof tokens[k] === 'number' ? tokens[k] : tokens[k].ts) as number;
    const found = await this.table.getMany(
      keys.map((k) => ({ pk, sk: Keys.eventSk(rankOf(timestampOf(k), k)) })),
      cap,
      true,
    );
    keys.forEach((k, i) => {
      if (found[i]) delete tokens[k];
    });
    return tokens;
  }

  private claimSignature(cb: Callback, signatureKey: string, cap: Capacity): Promise<boolean> {
    const claim = {
      pk: Keys.signaturePk(cb.appKey, signatureKey),
      sk: Keys.signatureSk,
      eventKey: cb.key,
      expiresAt: this.expiry(),
    };
    return this.table.putIf(claim, 'attribute_not_exists(pk) OR eventKey = :k', { ':k': { S: cb.key } }, cap);
  }

  /** Writes the ledger entry; false when another delivery of the same callback wrote it first. */
  private async putLedgerEntry(
    key: Key,
    d: DeliveredCallback,
    fileName: string | null,
    cap: Capacity,
  ): Promise<boolean> {
    const cb = d.callback;
    const item = {
      ...key,
      kind: 'event',
      key: cb.key,
      service: cb.service,
      type: cb.type,
      timestamp: cb.timestamp,
      fileName,
      receivedAt: d.receivedAt,
      verdict: d.verdict,
      mode: d.mode,
      requestId: d.requestId,
      messageId: d.messageId,
      raw: d.raw,
      expiresAt: this.expiry(),
    };
    // false: another delivery of the same callback finished first; its entry is as good as this one.
    return this.table.putIf(item, 'attribute_not_exists(pk)', undefined, cap);
  }

  async quarantine(entry: QuarantineEntry): Promise<Capacity> {
    const cap = noCapacity();
    await this.table.put(
      {
        pk: Keys.quarantinePk(dayOf(entry.receivedAt)),
        sk: Keys.quarantineSk(entry.receivedAt, entry.messageId),
        kind: 'quarantine',
        ...entry,
        expiresAt: this.expiry(),
      },
      cap,
    );
    return cap;
  }

  private async quarantineParsed(
    d: DeliveredCallback,
    reason: QuarantineEntry['reason'],
    detail: string,
    cap: Capacity,
  ) {
    const c = await this.quarantine({
      reason,
      detail,
      service: d.callback.service,
      raw: d.raw,
      receivedAt: d.receivedAt,
      verdict: d.verdict,
      requestId: d.requestId,
      messageId: d.messageId,
      appKey: d.callback.appKey,
      taskId: d.callback.id,
    });
    cap.read += c.read;
    cap.write += c.write;
  }

  private expiry(): number {
    return Math.floor(this.opts.now() / 1000) + this.opts.ttlDays * 86400;
  }
}
