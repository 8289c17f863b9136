// The archive of the local stack queried with SQL: its objects copied out of fauxqs's S3 into a folder (DuckDB
// cannot read S3 here: its httpfs extension would have to be downloaded), then read by DuckDB with hive
// partitioning, as Athena reads them on a stage through the Glue table's partition projection. The query runs
// against `raw`, one row per delivery (lib/domain/archive.ts), the same SQL as on Athena.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { ARCHIVE_COLUMNS, withRawTable } from '../../lib/domain/archive.ts';
import { inParallel } from '../../lib/in-parallel.ts';

/** Objects copied at the same time: the archive of a busy stack is thousands of small objects. */
const COPY_CONCURRENCY = 16;

/** Copies every object under `prefix` of `bucket` into `dir` (same keys); answers how many. */
export async function copyArchive(s3: S3Client, bucket: string, prefix: string, dir: string): Promise<number> {
  let token: string | undefined;
  let copied = 0;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    const keys = (page.Contents ?? [])
      .map(({ Key }) => Key)
      .filter((Key): Key is string => !!Key && !Key.endsWith('/') && !Key.split('/').includes('..'));
    await inParallel(keys, COPY_CONCURRENCY, async (Key) => {
      const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key }));
      const path = join(dir, Key);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, await object.Body!.transformToByteArray());
      copied++;
    });
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return copied;
}

/** DuckDB's types for the Athena types of ARCHIVE_COLUMNS. */
const DUCKDB_TYPES: Record<string, string> = { string: 'VARCHAR', int: 'INTEGER', boolean: 'BOOLEAN' };

/** DuckDB's read of the copied lines under `root` (the folder holding `service=…/`), partition columns as text. */
export function duckdbSource(root: string): string {
  const columns = ARCHIVE_COLUMNS.map(([name, type]) => `${name}: '${DUCKDB_TYPES[type]}'`).join(', ');
  const glob = join(root, 'service=*', '**', '*.gz').replaceAll("'", "''");
  return (
    `read_json('${glob}', format = 'newline_delimited', compression = 'gzip', hive_partitioning = true, ` +
    `hive_types_autocast = false, columns = {${columns}})`
  );
}

export interface QueryResult {
  columns: string[];
  /** DuckDB's type of each column (`BIGINT`, `VARCHAR`, …): a BIGINT's values are JSON strings in `rows`. */
  types: string[];
  rows: Record<string, unknown>[];
}

/** Runs `sql` against `raw`, the lines under `root`. No line yet: the query runs against an empty `raw`. */
export async function queryLocalArchive(root: string, sql: string): Promise<QueryResult> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const empty = `(SELECT ${[
      ...ARCHIVE_COLUMNS.map(([name, type]) => `CAST(NULL AS ${DUCKDB_TYPES[type]}) AS ${name}`),
      "'' AS service",
      "'' AS dt",
    ].join(', ')} WHERE false)`;
    const { readdir } = await import('node:fs/promises');
    const any = await readdir(root, { recursive: true }).then(
      (names) => names.some((n) => n.endsWith('.gz')),
      () => false,
    );
    const reader = await connection.runAndReadAll(withRawTable(sql, any ? duckdbSource(root) : empty));
    return {
      columns: reader.columnNames(),
      types: reader.columnTypes().map(String),
      rows: reader.getRowObjectsJson() as Record<string, unknown>[],
    };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
