// One SQL query run by Athena in a workgroup (the archive's: infra/archive.yml), as `callbacks archive query` and
// `callbacks replay` run theirs on a stage: StartQueryExecution, GetQueryExecution until the query is done, then
// GetQueryResults page by page. Athena writes the results to the workgroup's own location; the rows come back as
// text, typed by the result's column types. A query Athena refuses or fails is one AthenaQueryError, its reason
// as Athena gives it.
import {
  type AthenaClient,
  type ColumnInfo,
  GetQueryExecutionCommand,
  GetQueryResultsCommand,
  type QueryExecution,
  StartQueryExecutionCommand,
} from '@aws-sdk/client-athena';

export interface AthenaQuery {
  workgroup: string;
  database: string;
  sql: string;
  /** Called at each look at the query while it runs. */
  onProgress?: (progress: AthenaProgress) => void;
  /** The first wait between two looks (ms, default 250); each wait is longer, up to 2 s. */
  pollMs?: number;
  /** Rows a GetQueryResults page asks for (at most 1,000, Athena's limit). */
  pageSize?: number;
}

export interface AthenaProgress {
  state: string;
  elapsedMs: number;
  scannedBytes: number | null;
}

export interface AthenaResult {
  queryExecutionId: string;
  columns: { name: string; type: string }[];
  /** Each row's values as text, in the columns' order; null for SQL NULL. */
  rows: (string | null)[][];
  scannedBytes: number | null;
}

/** A query Athena refused, failed or cancelled; `cutoff`: the workgroup's bytes-scanned cutoff stopped it. */
export class AthenaQueryError extends Error {
  override name = 'AthenaQueryError';
  readonly state: string;
  readonly cutoff: boolean;
  readonly scannedBytes: number | null;
  constructor(message: string, state: string, scannedBytes: number | null) {
    super(message);
    this.state = state;
    this.cutoff = /bytes scanned limit|data usage limit|scan limit/i.test(message);
    this.scannedBytes = scannedBytes;
  }
}

const MAX_POLL_MS = 2000;
const MAX_PAGE = 1000;

export async function runAthenaQuery(client: AthenaClient, q: AthenaQuery): Promise<AthenaResult> {
  const started = Date.now();
  let id: string | undefined;
  try {
    ({ QueryExecutionId: id } = await client.send(
      new StartQueryExecutionCommand({
        QueryString: q.sql,
        WorkGroup: q.workgroup,
        QueryExecutionContext: { Database: q.database },
      }),
    ));
  } catch (err) {
    // A query refused at the start (a syntax error Athena finds at once, a workgroup that does not exist).
    if ((err as { name?: string }).name === 'InvalidRequestException')
      throw new AthenaQueryError((err as Error).message, 'REFUSED', null);
    throw err;
  }
  if (!id) throw new Error('StartQueryExecution returned no QueryExecutionId');
  const done = await waitForQuery(client, id, started, q);
  const scannedBytes = done.Statistics?.DataScannedInBytes ?? null;
  const state = done.Status?.State ?? 'UNKNOWN';
  if (state !== 'SUCCEEDED') {
    const reason = done.Status?.StateChangeReason ?? done.Status?.AthenaError?.ErrorMessage ?? `the query is ${state}`;
    throw new AthenaQueryError(reason, state, scannedBytes);
  }
  return { queryExecutionId: id, ...(await readResults(client, id, q.pageSize)), scannedBytes };
}

async function waitForQuery(client: AthenaClient, id: string, started: number, q: AthenaQuery) {
  let wait = q.pollMs ?? 250;
  for (;;) {
    const { QueryExecution: execution } = await client.send(new GetQueryExecutionCommand({ QueryExecutionId: id }));
    const state = execution?.Status?.State ?? 'UNKNOWN';
    q.onProgress?.({
      state,
      elapsedMs: Date.now() - started,
      scannedBytes: execution?.Statistics?.DataScannedInBytes ?? null,
    });
    if (state === 'SUCCEEDED' || state === 'FAILED' || state === 'CANCELLED') return execution as QueryExecution;
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(MAX_POLL_MS, wait * 2);
  }
}

async function readResults(client: AthenaClient, id: string, pageSize = MAX_PAGE) {
  let columns: { name: string; type: string }[] = [];
  const rows: (string | null)[][] = [];
  let token: string | undefined;
  let first = true;
  do {
    const page = await client.send(
      new GetQueryResultsCommand({
        QueryExecutionId: id,
        MaxResults: Math.min(MAX_PAGE, pageSize),
        ...(token ? { NextToken: token } : {}),
      }),
    );
    const info: ColumnInfo[] = page.ResultSet?.ResultSetMetadata?.ColumnInfo ?? [];
    if (first)
      columns = info.map((c) => ({ name: c.Label ?? c.Name ?? '', type: (c.Type ?? 'varchar').toLowerCase() }));
    let pageRows = (page.ResultSet?.Rows ?? []).map((r) => (r.Data ?? []).map((d) => d.VarCharValue ?? null));
    // The first row of a SELECT's first page is its header (the column names), not a row of the result.
    if (first && pageRows[0]?.every((v, i) => v === columns[i]?.name)) pageRows = pageRows.slice(1);
    rows.push(...pageRows);
    token = page.NextToken;
    first = false;
  } while (token);
  return { columns, rows };
}
