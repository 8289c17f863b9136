// Storage incidents as the table keeps them (docs/verification.md, "Storage incidents"), written by the verifier only:
// each storage whose uploads failed (`STORAGES`, one small partition the sweep reads whole: `ak` its appKey, `sg` its
// name) with its window of failures (`wf` its first, `lf` its latest, `ls` the latest success since, platform time) and
// its open incident (`oi`); each failed upload of a storage (`FAILS#…`, by its first failure, put once whatever the
// event's repeats); and each incident as reported (`INCIDENT#…`, `inc` its JSON). Attribute names are short, and none
// is one of DynamoDB's reserved words. Every write is a conditional update on what was read, so two sweeps at once, or
// a sweep that crashed, open, publish and resolve each incident once or again the same.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { FailedUpload, ProbeResult, StorageIncident } from '../../../domain/storage-incidents.ts';
import type { Capacity } from '../../../domain/task-store.ts';
import { fileState } from '../../../domain/task.ts';
import { fileFromItem } from '../table/items.ts';
import { type StorageTracker, storageIncidents, storageTrackers } from './incident-reads.ts';
import { noCapacity, type TableReader, updateIf } from '../table/table-client.ts';
import { Keys } from '../table/table.ts';

export type { StorageTracker } from './incident-reads.ts';

/** Failed uploads are kept a week past their purge: an incident's facts can be read again for that long. */
const FAILURE_KEPT_S = 7 * 86_400;

const S = (value: string): AttributeValue => ({ S: value });
const N = (value: number): AttributeValue => ({ N: String(value) });

const trackerKey = (appKey: string, storage: string) => ({ pk: Keys.storagesPk, sk: Keys.storageSk(appKey, storage) });

export class IncidentStore {
  private readonly table: TableReader;

  constructor(table: TableReader) {
    this.table = table;
  }

  /**
   * A failed upload of a storage: kept once (its first failure names it), and the storage's window of failures
   * opened or widened. A failure no later than the last resolved incident's belongs to it: it opens nothing.
   */
  async recordFailure(appKey: string, storage: string, f: FailedUpload, cap: Capacity = noCapacity()): Promise<void> {
    await updateIf(
      this.table,
      { pk: Keys.failuresPk(appKey, storage), sk: Keys.failureSk(f.at, f.taskId, f.fileName) },
      {
        update: 'SET fa = :at, pa = :p, ti = :t, fn = :f, sv = :s, expiresAt = :e',
        condition: 'attribute_not_exists(pk)',
        values: {
          ':at': N(f.at),
          ':p': N(f.purgeAt),
          ':t': S(f.taskId),
          ':f': S(f.fileName),
          ':s': S(f.service),
          ':e': N(Math.ceil(f.purgeAt / 1000) + FAILURE_KEPT_S),
        },
      },
      cap,
    );
    const key = trackerKey(appKey, storage);
    const known = { ':a': S(appKey), ':st': S(storage), ':at': N(f.at) };
    // The window's first failure (the earliest, whatever order the events come in), unless already resolved.
    await updateIf(
      this.table,
      key,
      {
        update: 'SET ak = :a, sg = :st, wf = :at',
        condition: '(attribute_not_exists(wf) OR wf > :at) AND (attribute_not_exists(rl) OR rl < :at)',
        values: known,
      },
      cap,
    );
    await updateIf(
      this.table,
      key,
      {
        update: 'SET lf = :at',
        condition: 'attribute_exists(wf) AND (attribute_not_exists(lf) OR lf < :at)',
        values: { ':at': N(f.at) },
      },
      cap,
    );
  }

  /** A successful upload to a storage whose window of failures is open: the latest success it has seen. */
  async recordSuccess(appKey: string, storage: string, at: number, cap: Capacity = noCapacity()): Promise<void> {
    const key = trackerKey(appKey, storage);
    const found = await this.table.get(key, cap, false);
    if (!found || found.wf === undefined || (typeof found.ls === 'number' && found.ls >= at)) return;
    await updateIf(
      this.table,
      key,
      {
        update: 'SET ls = :at',
        condition: 'attribute_exists(wf) AND (attribute_not_exists(ls) OR ls < :at)',
        values: { ':at': N(at) },
      },
      cap,
    );
  }

  /** Every storage with failures, as the sweep finds them. */
  trackers(cap: Capacity = noCapacity()): Promise<StorageTracker[]> {
    return storageTrackers(this.table, cap);
  }

  /** The storage's failed uploads whose first failure is at or after `from`. */
  async failuresSince(
    appKey: string,
    storage: string,
    from: number,
    cap: Capacity = noCapacity(),
  ): Promise<FailedUpload[]> {
    const out: FailedUpload[] = [];
    for await (const item of this.table.queryAll(
      {
        KeyConditionExpression: 'pk = :pk AND sk >= :from',
        ExpressionAttributeValues: {
          ':pk': S(Keys.failuresPk(appKey, storage)),
          ':from': S(Keys.failureSk(from, '', '').slice(0, 16)),
        },
        ConsistentRead: true,
      },
      cap,
    ))
      out.push({
        service: item.sv,
        taskId: item.ti,
        fileName: item.fn,
        at: item.fa,
        purgeAt: item.pa,
      });
    return out;
  }

  /**
   * Whether every file of the failures is uploaded as it stands, or past its purge by `now` (lost), and the latest
   * of those uploads (platform time): a success the verifier may not have been told of yet. Files read in batches,
   * stopping at the first that is neither.
   */
  async allSettled(
    appKey: string,
    failures: readonly FailedUpload[],
    now: number,
    cap: Capacity = noCapacity(),
  ): Promise<{ settled: boolean; latestUpload: number | null }> {
    const open = failures.filter((f) => f.purgeAt > now);
    let latestUpload: number | null = null;
    for (let i = 0; i < open.length; i += 100) {
      const chunk = open.slice(i, i + 100);
      const items = await this.table.getMany(
        chunk.map((f) => ({ pk: Keys.taskPk(f.taskId), sk: Keys.fileSk(appKey, f.fileName) })),
        cap,
        false,
      );
      for (const item of items) {
        const file = item ? fileFromItem(item) : null;
        if (!file || fileState(file) !== 'uploaded') return { settled: false, latestUpload: null };
        latestUpload = Math.max(latestUpload ?? 0, file.upload!.at);
      }
    }
    return { settled: true, latestUpload };
  }

  /** Opens the storage's incident, on condition that its window is still the one read and none is open. */
  open(t: StorageTracker, id: string, openedAt: number, cap: Capacity = noCapacity()): Promise<boolean> {
    return this.transition(
      t,
      'SET oi = :id, oa = :oa',
      'wf = :wf AND attribute_not_exists(oi)',
      { ':id': S(id), ':oa': N(openedAt), ':wf': N(t.windowStart!) },
      cap,
    );
  }

  /** Its opening is out (a sweep that crashed before this publishes it again, same id). */
  openedPublished(t: StorageTracker, id: string, cap: Capacity = noCapacity()): Promise<boolean> {
    return this.transition(t, 'SET op = :yes', 'oi = :id', { ':yes': { BOOL: true }, ':id': S(id) }, cap);
  }

  /** The latest probe of the storage, shown while its incident lasts. */
  probed(t: StorageTracker, probe: ProbeResult, cap: Capacity = noCapacity()): Promise<boolean> {
    return this.transition(t, 'SET pr = :pr', 'attribute_exists(sk)', { ':pr': S(JSON.stringify(probe)) }, cap);
  }

  /** The incident resolves: kept on the storage until its event is out (then `close`). */
  resolving(
    t: StorageTracker,
    id: string,
    at: number,
    resolution: NonNullable<StorageIncident['resolution']>,
    cap: Capacity = noCapacity(),
  ): Promise<boolean> {
    return this.transition(
      t,
      'SET rs = :at, rr = :rr',
      'oi = :id AND attribute_not_exists(rs)',
      { ':at': N(at), ':rr': S(resolution), ':id': S(id) },
      cap,
    );
  }

  /**
   * Ends the storage's window: its open incident (`id`) resolved and announced, or a window that recovered before it
   * became one. Failures up to its latest failure, or the success that ended it, belong to it: one the platform made
   * before its storage recovered, delivered late, opens nothing.
   */
  close(t: StorageTracker, id: string | null, cap: Capacity = noCapacity()): Promise<boolean> {
    const through = Math.max(t.latestFailure ?? 0, t.windowStart ?? 0, t.latestSuccess ?? 0);
    return this.transition(
      t,
      'SET rl = :rl REMOVE wf, lf, ls, oi, oa, op, rs, rr, pr',
      id === null ? 'wf = :wf AND attribute_not_exists(oi)' : 'oi = :id',
      id === null ? { ':rl': N(through), ':wf': N(t.windowStart!) } : { ':rl': N(through), ':id': S(id) },
      cap,
    );
  }

  /** An incident as reported (written again whole at each sweep while it lasts). */
  async save(incident: StorageIncident, cap: Capacity = noCapacity()): Promise<void> {
    await updateIf(
      this.table,
      { pk: Keys.incidentsPk(incident.appKey, incident.storage), sk: incident.id },
      {
        update: 'SET inc = :i, oa = :o',
        values: { ':i': S(JSON.stringify(incident)), ':o': N(incident.openedAt) },
      },
      cap,
    );
  }

  /** A storage's incidents, newest first (`callbacks storage status`). */
  incidents(appKey: string, storage: string, limit = 20, cap: Capacity = noCapacity()): Promise<StorageIncident[]> {
    return storageIncidents(this.table, appKey, storage, limit, cap);
  }

  private async transition(
    t: StorageTracker,
    update: string,
    condition: string,
    values: Record<string, AttributeValue>,
    cap: Capacity,
  ): Promise<boolean> {
    const result = await updateIf(this.table, trackerKey(t.appKey, t.storage), { update, condition, values }, cap);
    return result.ok;
  }
}
