// The archive of raw callbacks: every delivery the worker stores (applied, found a duplicate, or set aside) as one
// JSON line, with what the ingest learned of it and what the worker made of it. Lines land in S3 under
// `service=…/dt=…/appKey=…/` (Data Firehose's dynamic partitioning reads `partition` off each line), where Athena
// (the Glue table of infra/archive.yml) and DuckDB locally read them as the table `raw`. A delivery may be
// archived more than once (its record failed after its line went out, and came again): `raw` keeps one line per
// `delivery_id`, the first archived (RAW_VIEW_SQL).
import type { Service } from '../platform/services.ts';
import type { SignatureMode, SignatureVerdict } from '../signature/verdicts.ts';

/** What became of a delivery: the worker's outcome of a stored record. */
export type ArchivedOutcome = 'applied' | 'duplicate' | 'quarantined';

/** One archived delivery, as its JSON line holds it (snake_case: Athena's column names are lower case). */
export interface ArchiveLine {
  /** The ingest's request id, else the queue message's id: the same for every copy of one delivery. */
  delivery_id: string;
  message_id: string;
  request_id: string | null;
  app_key: string;
  /** ISO 8601, when the ingest received it. */
  received_at: string;
  /** ISO 8601, when the worker archived this copy. */
  archived_at: string;
  verdict: SignatureVerdict;
  mode: SignatureMode;
  outcome: ArchivedOutcome;
  /** Why it was set aside (a quarantine reason), when the worker knew it before the store did; else null. */
  reason: string | null;
  /** The callback's type (1 to 4), when its body could be read. */
  type: number | null;
  task_id: string | null;
  file_name: string | null;
  /** The upload's status code of a type 4 callback. */
  upload_code: number | null;
  source_ip: string | null;
  user_agent: string | null;
  /** Sent to the queue again by someone other than the ingest (a redrive, a replay). */
  resent: boolean;
  /** The body exactly as received. */
  body: string;
  /** Where Data Firehose puts the line (its dynamic partitioning's keys); not a column of `raw`. */
  partition: ArchivePartition;
}

export interface ArchivePartition {
  service: Service;
  /** The UTC day the ingest received it, YYYY-MM-DD. */
  dt: string;
  /** The appKey, when it can name a folder (ARCHIVE_FOLDER_SAFE); else `_other` (`app_key` keeps the real one). */
  appKey: string;
}

/** Where the worker's lines go (Data Firehose on AWS, devkit/local/firehose.ts locally). */
export interface ArchiveWriter {
  /**
   * Sends the lines in as few requests as the service allows; answers, line by line, whether it is archived.
   * Throws when nothing could be sent.
   */
  put(lines: readonly ArchiveLine[]): Promise<boolean[]>;
}

/** An appKey that is safe as an S3 folder name and an Athena partition value as it is. */
const ARCHIVE_FOLDER_SAFE = /^[A-Za-z0-9_-]{1,128}$/;
/** The folder of lines whose appKey is not ARCHIVE_FOLDER_SAFE (empty, unknown, or oddly spelled). */
const OTHER_APP_KEYS_FOLDER = '_other';

export function partitionOf(service: Service, appKey: string, receivedAt: number): ArchivePartition {
  return {
    service,
    dt: new Date(receivedAt).toISOString().slice(0, 10),
    appKey: ARCHIVE_FOLDER_SAFE.test(appKey) ? appKey : OTHER_APP_KEYS_FOLDER,
  };
}

/** The columns of `raw`, in order, with their Athena (Glue) types; the partition columns come after them. */
export const ARCHIVE_COLUMNS = [
  ['delivery_id', 'string'],
  ['message_id', 'string'],
  ['request_id', 'string'],
  ['app_key', 'string'],
  ['received_at', 'string'],
  ['archived_at', 'string'],
  ['verdict', 'string'],
  ['mode', 'string'],
  ['outcome', 'string'],
  ['reason', 'string'],
  ['type', 'int'],
  ['task_id', 'string'],
  ['file_name', 'string'],
  ['upload_code', 'int'],
  ['source_ip', 'string'],
  ['user_agent', 'string'],
  ['resent', 'boolean'],
  ['body', 'string'],
] as const satisfies readonly (readonly [keyof ArchiveLine, string])[];

/**
 * The partition columns of `raw` (Glue's partition keys, projected: the folders `service=` and `dt=`). The
 * `appKey=` folders below them are read with their day; a query of one appKey filters on `app_key`.
 */
const ARCHIVE_PARTITION_COLUMNS = ['service', 'dt'] as const;

/**
 * The table `raw` over the stored lines `source` (a table, or a DuckDB read of files), one row per delivery: of its
 * copies, the first archived. The same SQL for Athena and DuckDB, given as a WITH clause before the query. The copies
 * of a delivery are numbered within their partition (its service and received day, the same for every copy): both
 * engines move a query's filter through the numbering only onto the columns it is partitioned by, so that a query
 * naming its days reads only their folders, not the whole archive.
 */
function rawViewSql(source: string): string {
  const columns = [...ARCHIVE_COLUMNS.map(([name]) => name), ...ARCHIVE_PARTITION_COLUMNS].join(', ');
  const partitions = ARCHIVE_PARTITION_COLUMNS.join(', ');
  return (
    `SELECT ${columns} FROM (SELECT *, row_number() OVER ` +
    `(PARTITION BY ${partitions}, delivery_id ORDER BY archived_at, message_id) AS copy FROM ${source}) WHERE copy = 1`
  );
}

/**
 * A query of `raw` as an engine runs it: `raw` defined first, as a WITH clause. A query with its own WITH clause
 * keeps it, after `raw`'s.
 */
export function withRawTable(sql: string, source: string): string {
  const view = `raw AS (${rawViewSql(source)})`;
  const own = /^\s*with\s+/i.exec(sql);
  return own ? `WITH ${view}, ${sql.slice(own[0].length)}` : `WITH ${view} ${sql}`;
}
