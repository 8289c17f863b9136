// The archive of raw callbacks as the CLI asks it with SQL (`callbacks archive query`, `callbacks replay`): on a
// stage, Athena in the stage's archive workgroup and database (the stack's outputs ArchiveWorkgroupName and
// ArchiveDatabaseName, looked up once); on the local stack, DuckDB over the archive's objects in the stack's S3
// (devkit/local/archive.ts), copied out once per command. The same SQL either way: it names the table `raw`, one row
// per delivery (lib/domain/archive.ts), defined before it as a WITH clause. Values come back typed as JSON: numbers,
// booleans, text and null, whichever engine answered.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AthenaClient } from '@aws-sdk/client-athena';
import { S3Client } from '@aws-sdk/client-s3';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { copyArchive, queryLocalArchive } from '../devkit/local/archive.ts';
import { LOCAL_CREDENTIALS, SERVICE } from '../devkit/local/deployed-settings.ts';
import type { LocalStackInfo } from '../devkit/local/stack-file.ts';
import { TargetError, type Target } from '../devkit/local/target.ts';
import { AthenaQueryError, type AthenaProgress, runAthenaQuery } from '../lib/aws/athena/query.ts';
import { awsClientSettings } from '../lib/aws/env-client-settings.ts';
import { withRawTable } from '../lib/domain/archive.ts';
import { errorSentence } from '../lib/text.ts';
import { humanSize } from './format.ts';
import { CliError } from './inspect.ts';
import { cliIo } from './io.ts';
import { stackOutput } from './stack-outputs.ts';

/** A value of a row as printed with --json. */
export type ArchiveValue = string | number | boolean | null;

export interface ArchiveRows {
  columns: string[];
  rows: Record<string, ArchiveValue>[];
  /** What Athena read for the query (null locally). */
  scannedBytes: number | null;
}

/** Where the local stack keeps its archive (`.data/stack.json`'s `archive`): a bucket of its S3, and a prefix. */
export interface ArchiveLocation {
  bucket: string;
  prefix: string;
}

/** The folders a command reads, when it knows them: the local copy takes only these. */
export interface ArchiveScope {
  services: readonly string[];
  /** UTC days, YYYY-MM-DD. */
  days: readonly string[];
}

export interface Archive {
  /** Where the queries run, for messages. */
  describe: string;
  engine: 'athena' | 'duckdb';
  query(sql: string): Promise<ArchiveRows>;
  close(): Promise<void>;
}

export interface OpenArchiveOptions {
  /** Each look at a query Athena runs (a progress line on a terminal). */
  onProgress?: (progress: AthenaProgress) => void;
  scope?: ArchiveScope;
}

/** The archive of the target: the local stack's, or a stage's. */
export async function openArchive(target: Target, opts: OpenArchiveOptions = {}): Promise<Archive> {
  if (target.local) return openLocalArchive(target.local, opts.scope);
  if (target.stage) return openStageArchive(target.stage, target.region, opts.onProgress);
  throw new TargetError(
    `${target.describe}: the archive is found through a stage's stack; name the stage with --stage (and --region)`,
  );
}

/** The stack file's archive, when the stack keeps one. */
export function archiveOf(local: LocalStackInfo): ArchiveLocation | null {
  const { archive } = local as LocalStackInfo & { archive?: Partial<ArchiveLocation> };
  return typeof archive?.bucket === 'string' && typeof archive.prefix === 'string'
    ? { bucket: archive.bucket, prefix: archive.prefix }
    : null;
}

function openLocalArchive(local: LocalStackInfo, scope: ArchiveScope | undefined): Archive {
  const location = archiveOf(local);
  if (!location)
    throw new TargetError(
      `the local stack at ${local.url} keeps no archive (its .data/stack.json names none): restart it with this ` +
        'version ("npm start")',
    );
  const s3 = new S3Client({
    endpoint: local.sqsEndpoint,
    region: local.region,
    credentials: LOCAL_CREDENTIALS,
    forcePathStyle: true,
    maxAttempts: 2,
  });
  let dir: string | undefined;
  let copied: Promise<string> | undefined;
  // The objects are copied out at the first query, once: the command's queries then read the same lines.
  const copy = async () => {
    dir = await mkdtemp(join(tmpdir(), 'callbacks-archive-'));
    const prefixes = scope
      ? scope.services.flatMap((s) => scope.days.map((d) => `${location.prefix}service=${s}/dt=${d}/`))
      : [location.prefix];
    for (const prefix of prefixes) await copyArchive(s3, location.bucket, prefix, dir);
    return join(dir, location.prefix);
  };
  return {
    describe: `the archive of the local stack at ${local.url} (s3://${location.bucket}/${location.prefix})`,
    engine: 'duckdb',
    async query(sql) {
      copied ??= copy();
      const root = await copied;
      let result: Awaited<ReturnType<typeof queryLocalArchive>>;
      try {
        result = await queryLocalArchive(root, sql);
      } catch (err) {
        throw new CliError(`the query failed: ${errorSentence(err, { bare: true })}`);
      }
      const rows = result.rows.map((row) =>
        Object.fromEntries(result.columns.map((name, i) => [name, typed(row[name], result.types[i]!)])),
      );
      return { columns: result.columns, rows, scannedBytes: null };
    },
    async close() {
      s3.destroy();
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

async function openStageArchive(
  stage: string,
  region: string,
  onProgress: OpenArchiveOptions['onProgress'],
): Promise<Archive> {
  const { env } = cliIo();
  const stackName = `${env.CALLBACKS_SERVICE_NAME ?? SERVICE}-${stage}`;
  let credentials = awsClientSettings('CLOUDFORMATION', env).credentials;
  if (!credentials) {
    try {
      credentials = await defaultProvider()();
    } catch (err) {
      throw new TargetError(`no AWS credentials were found (environment, profile, SSO or role): ${errorSentence(err)}`);
    }
  }
  const output = (outputKey: string) => stackOutput({ stackName, outputKey, region, credentials, env });
  const [workgroup, database] = await Promise.all([output('ArchiveWorkgroupName'), output('ArchiveDatabaseName')]);
  const athena = new AthenaClient({ ...awsClientSettings('ATHENA', env), region, maxAttempts: 3 });
  const describe = `Athena workgroup ${workgroup} of stage ${stage} in ${region} (database ${database})`;
  return {
    describe,
    engine: 'athena',
    async query(sql) {
      // The query starts on a line of its own, after `raw`'s definition: Athena's line numbers are one too many.
      const shifted = /^\s*with\s/i.test(sql) ? 0 : 1;
      try {
        const result = await runAthenaQuery(athena, {
          workgroup,
          database,
          sql: withRawTable(`\n${sql}`, `"${database.replaceAll('"', '""')}"."raw"`),
          ...(onProgress ? { onProgress } : {}),
        });
        const columns = result.columns.map((c) => c.name);
        const rows = result.rows.map((values) =>
          Object.fromEntries(result.columns.map((c, i) => [c.name, typed(values[i] ?? null, c.type)])),
        );
        return { columns, rows, scannedBytes: result.scannedBytes };
      } catch (err) {
        if (!(err instanceof AthenaQueryError)) throw err;
        const reason = err.message.replace(/\bline (\d+):(\d+)/g, (whole, line: string, column: string) =>
          Number(line) > shifted ? `line ${Number(line) - shifted}:${column}` : whole,
        );
        if (err.cutoff) {
          const scanned = err.scannedBytes ? `, after ${humanSize(err.scannedBytes)}` : '';
          throw new CliError(
            `the query was stopped by the bytes-scanned cutoff of workgroup ${workgroup} (${reason}${scanned}): ` +
              "name the days it reads (dt = '2025-11-22', dt BETWEEN …) so that it reads only their folders",
          );
        }
        throw new CliError(`the query failed on Athena (${err.state}): ${reason}`);
      }
    },
    async close() {
      athena.destroy();
    },
  };
}

/** Integer types of either engine, whose values come as text (Athena) or as JSON strings (DuckDB's BIGINT). */
const INTEGER_TYPE = /^(tinyint|smallint|integer|int|bigint|hugeint|utinyint|usmallint|uinteger|ubigint)$/i;
const DECIMAL_TYPE = /^(double|float|real|decimal)\b/i;

/** A value as JSON: numbers as numbers (an integer too large for one stays text), booleans, text, null. */
function typed(value: unknown, type: string): ArchiveValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (INTEGER_TYPE.test(type)) {
    const n = Number(text);
    return Number.isSafeInteger(n) ? n : text;
  }
  if (DECIMAL_TYPE.test(type)) {
    const n = Number(text);
    return Number.isFinite(n) ? n : text;
  }
  if (/^boolean$/i.test(type)) return text === 'true';
  return text;
}
