// A file's check in its storage as the table keeps it (docs/verification.md, "Items"): one item per checked
// file beside the task's parts (`V#<scope>#F#<fileName>`), written by the verifier only, so that no write of the
// worker's ever meets it; and the task's checked files counted by state (`V#<scope>#S`), for the listings'
// `verification` filter.
//
// Counted exactly once, without transactions: a check that changes a file's counted state first claims the
// charge on the file's item (its state, the state counted, the charge's number `pc` and the state it leaves
// `pf`, on condition of the charge number read), then adds it to the counts with the charge's number in an
// attribute of the file's own (`j<hash>`, on condition that it is another), then clears the claim, then that
// attribute. A check that finds a claim (a verifier stopped half-way, or another one at work) settles it
// first: the counts' condition tells whether it was added already. Four writes the first time a file is
// checked, one for a check that finds it as it was.
import { createHash } from 'node:crypto';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { TaskSummary } from '../../../domain/task-summary.ts';
import type { FileView } from '../../../domain/task.ts';
import {
  CHECKED_STATES,
  type CheckedState,
  type FileVerification,
  hasVerification,
  isMissingState,
  type SizeMatch,
  type VerifiedFileView,
  verificationOf,
} from '../../../domain/verification.ts';
import type { Capacity } from '../../../domain/task-store.ts';
import { type Item, type Key, noCapacity, type TableReader, updateIf } from '../table/table-client.ts';
import type { ResolvedQuery } from '../table/cursors.ts';
import { Keys } from '../table/table.ts';

/** The counts' attribute of each checked state. */
const COUNT_ATTRS: Record<CheckedState, string> = {
  verified: 'nv',
  missing: 'nm',
  empty: 'ne',
  size_differs: 'nd',
  unverifiable: 'nu',
};

/** Attempts at a file's item that another check keeps changing before giving up (the message comes back). */
const MAX_ATTEMPTS = 5;

const verificationKey = (appKey: string, id: string, fileName: string): Key => ({
  pk: Keys.taskPk(id),
  sk: Keys.verificationSk(appKey, fileName),
});
const countsKey = (appKey: string, id: string): Key => ({ pk: Keys.taskPk(id), sk: Keys.verificationCountsSk(appKey) });

/** A stored check: the verification, the upload it checked, and since when it finds the file missing. */
export interface StoredCheck {
  verification: FileVerification;
  /** The rank of the winning upload that was checked. */
  uploadRank: string | null;
  /** When a check first found the file missing, empty or of another size (null while it is not). */
  missingSince: number | null;
}

function checkFromItem(item: Item): StoredCheck {
  return {
    verification: {
      state: item.s,
      checkedAt: item.at ?? null,
      size: item.sz ?? null,
      sizeMatches: (item.sm ?? 'unknown') as SizeMatch,
      etag: item.et ?? null,
      checksum: item.ck ?? null,
      reason: item.rs ?? null,
    },
    uploadRank: item.ur ?? null,
    missingSince: item.ms ?? null,
  };
}

const S = (value: string): AttributeValue => ({ S: value });
const N = (value: number): AttributeValue => ({ N: String(value) });

/** The attribute of the counts that holds a file's charge in progress: short, and the same for one file. */
const chargeAttr = (fileName: string) =>
  `j${createHash('sha256').update(fileName, 'utf8').digest('base64url').slice(0, 16)}`;

/** The file a check is of: its task's appKey and id, and its name. */
export interface CheckedFile {
  appKey: string;
  id: string;
  fileName: string;
}

/** Since when a check finds the file missing: since the check before, when that one found it missing too. */
function missingSinceOf(found: Item | null, v: FileVerification & { state: CheckedState }): number | null {
  if (!isMissingState(v.state)) return null;
  return found && isMissingState(found.s) && typeof found.ms === 'number' ? found.ms : v.checkedAt!;
}

/**
 * An update that sets an attribute or, for null, removes it: each by an alias, as short names run into DynamoDB's
 * reserved words (`at`).
 */
function aliasedUpdate() {
  const names: Record<string, string> = {};
  const values: Record<string, AttributeValue> = {};
  const set: string[] = [];
  const remove: string[] = [];
  const put = (attr: string, value: string | number | null) => {
    names[`#${attr}`] = attr;
    if (value === null) remove.push(`#${attr}`);
    else {
      set.push(`#${attr} = :${attr}`);
      values[`:${attr}`] = typeof value === 'number' ? N(value) : S(value);
    }
  };
  const update = () => `SET ${set.join(', ')}${remove.length ? ` REMOVE ${remove.join(', ')}` : ''}`;
  return { names, values, put, update };
}

/** The verifier's writes: a file's check, and its charge to the task's counts. */
export class VerificationWrites {
  private readonly table: TableReader;

  constructor(table: TableReader) {
    this.table = table;
  }

  /**
   * Stores a check of one file, counted once in the task's counts: returns the check as stored (with since when
   * it finds the file missing). `uploadRank` is the rank of the winning upload that was checked.
   */
  async record(
    file: CheckedFile,
    verification: FileVerification & { state: CheckedState },
    uploadRank: string | null,
    cap: Capacity = noCapacity(),
  ): Promise<StoredCheck> {
    const key = verificationKey(file.appKey, file.id, file.fileName);
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      let found = await this.table.get(key, cap);
      if (found?.pc !== undefined) {
        await this.settle(file, found, cap);
        found = await this.table.get(key, cap);
      }
      const written = await this.write(key, found, verification, uploadRank, cap);
      if (!written) continue;
      if (written.pc !== undefined) await this.settle(file, written, cap);
      return checkFromItem(written);
    }
    throw new Error(`the check of ${file.fileName} kept meeting other checks of it; it comes again`);
  }

  /** The file's item with this check, on condition of the charge number read: null when another came first. */
  private async write(
    key: Key,
    found: Item | null,
    v: FileVerification & { state: CheckedState },
    uploadRank: string | null,
    cap: Capacity,
  ): Promise<Item | null> {
    const counted: CheckedState | null = found?.cs ?? null;
    const u = aliasedUpdate();
    u.put('s', v.state);
    u.put('at', v.checkedAt!);
    u.put('sm', v.sizeMatches);
    u.put('sz', v.size);
    u.put('et', v.etag);
    u.put('ck', v.checksum);
    u.put('rs', v.reason);
    u.put('ur', uploadRank);
    u.put('ms', missingSinceOf(found, v));
    const charge = (typeof found?.cn === 'number' ? found.cn : 0) + 1;
    if (counted !== v.state) {
      // A change of the state counted: claimed here, added to the counts by settle.
      u.put('cs', v.state);
      u.put('cn', charge);
      u.put('pc', charge);
      u.put('pf', counted ?? '');
    }
    if (found) {
      u.names['#cn'] = 'cn';
      u.names['#pc'] = 'pc';
      u.values[':seen'] = N(charge - 1);
    }
    const result = await updateIf(
      this.table,
      key,
      {
        update: u.update(),
        // Every write of the item before this one was a change of its counted state: it holds a charge number.
        condition: found ? '#cn = :seen AND attribute_not_exists(#pc)' : 'attribute_not_exists(pk)',
        names: u.names,
        values: u.values,
      },
      cap,
    );
    return result.ok ? result.item : null;
  }

  /** Adds a claimed charge to the counts (once, whoever settles it), then clears the claim and its mark. */
  private async settle({ appKey, id, fileName }: CheckedFile, claimed: Item, cap: Capacity): Promise<void> {
    const charge = N(claimed.pc);
    const mark = chargeAttr(fileName);
    const to: CheckedState = claimed.cs;
    const from = claimed.pf as CheckedState | '';
    const add = [`${COUNT_ATTRS[to]} :one`];
    if (from !== '' && from !== to) add.push(`${COUNT_ATTRS[from]} :minus`);
    await updateIf(
      this.table,
      countsKey(appKey, id),
      {
        update: `ADD ${add.join(', ')} SET #m = :c`,
        condition: 'attribute_not_exists(#m) OR #m <> :c',
        names: { '#m': mark },
        values: { ':one': N(1), ...(add.length > 1 ? { ':minus': N(-1) } : {}), ':c': charge },
      },
      cap,
    );
    await updateIf(
      this.table,
      verificationKey(appKey, id, fileName),
      {
        update: 'REMOVE #pc, #pf',
        condition: '#pc = :c',
        names: { '#pc': 'pc', '#pf': 'pf' },
        values: { ':c': charge },
      },
      cap,
    );
    await updateIf(
      this.table,
      countsKey(appKey, id),
      { update: 'REMOVE #m', condition: '#m = :c', names: { '#m': mark }, values: { ':c': charge } },
      cap,
    );
  }
}

/** The task's checked files by state, as its counts item says (all zero before any check). */
function countsFromItem(item: Item | null): Record<CheckedState, number> {
  const counts = {} as Record<CheckedState, number>;
  for (const state of CHECKED_STATES) counts[state] = Math.max(0, Number(item?.[COUNT_ATTRS[state]] ?? 0));
  return counts;
}

export async function readVerificationCounts(
  table: TableReader,
  appKey: string,
  id: string,
  cap: Capacity = noCapacity(),
): Promise<Record<CheckedState, number>> {
  return countsFromItem(await table.get(countsKey(appKey, id), cap, false));
}

/**
 * The checks of a page of a task's files, by file name: one Query of the checks from the page's first file to
 * its last (the checks sort as their files do), whatever the task's size.
 */
async function readPageChecks(
  table: TableReader,
  appKey: string,
  id: string,
  fileNames: readonly string[],
  cap: Capacity = noCapacity(),
): Promise<Map<string, StoredCheck>> {
  const checks = new Map<string, StoredCheck>();
  if (fileNames.length === 0) return checks;
  const prefix = Keys.verificationPrefix(appKey);
  const sorted = [...fileNames].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const wanted = new Set(fileNames);
  for await (const item of table.queryAll(
    {
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :a AND :b',
      ExpressionAttributeValues: {
        ':pk': S(Keys.taskPk(id)),
        ':a': S(`${prefix}${sorted[0]}`),
        ':b': S(`${prefix}${sorted.at(-1)}`),
      },
    },
    cap,
  )) {
    const fileName = String(item.sk).slice(prefix.length);
    if (wanted.has(fileName)) checks.set(fileName, checkFromItem(item));
  }
  return checks;
}

/**
 * A page of a task's files with their verifications (docs/contract.md §4): a file not uploaded has none, an
 * uploaded one its stored check, else `pending`. One Query for the page, none when no file of it is uploaded.
 */
export async function withVerifications(
  table: TableReader,
  appKey: string,
  id: string,
  files: readonly FileView[],
  cap: Capacity = noCapacity(),
): Promise<VerifiedFileView[]> {
  const uploaded = files.filter((f) => f.upload === 'uploaded').map((f) => f.fileName);
  const checks = await readPageChecks(table, appKey, id, uploaded, cap);
  return files.map((f) => ({ ...f, verification: verificationOf(f, checks.get(f.fileName)?.verification) }));
}

/**
 * For the listings' `verification` filter (`q.vf`), whether the task has a file in that state: one read of its
 * counts of checks, with the uploaded files its row counts (those not checked are pending). Without it, true.
 */
export async function verificationWithin(
  table: TableReader,
  summary: TaskSummary,
  q: Pick<ResolvedQuery, 'vf'>,
  cap: Capacity = noCapacity(),
): Promise<boolean> {
  if (q.vf === undefined) return true;
  const counts = await readVerificationCounts(table, summary.appKey, summary.id, cap);
  return hasVerification(q.vf, counts, summary.fileCount - summary.pendingFiles - summary.failedFiles);
}
