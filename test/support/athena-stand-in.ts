// A stand-in for what `callbacks archive query` and `callbacks replay` ask of a stage's AWS to query its archive (no
// emulator has Athena): an HTTP server speaking Athena's JSON protocol for StartQueryExecution, GetQueryExecution
// and GetQueryResults, and CloudFormation's query protocol for DescribeStacks (the stack's outputs), as
// devkit/local/firehose.ts stands in for Firehose. What a query answers is the test's: rows given as Athena gives
// them (text, a header row first), paged by the stand-in's own page size, or a failure with Athena's reason. Every
// request is kept, for the test to read what was sent.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { closeServer, listen } from '../../devkit/local/server-lifecycle.ts';

export interface StandInAnswer {
  columns?: { name: string; type: string }[];
  rows?: (string | null)[][];
  /** The states GetQueryExecution reports before the last (default: one RUNNING). */
  running?: number;
  /** A query that ends FAILED or CANCELLED, with Athena's reason. */
  ends?: { state: 'FAILED' | 'CANCELLED'; reason: string };
  /** Refused at once by StartQueryExecution (InvalidRequestException). */
  refused?: string;
  scannedBytes?: number;
}

export interface AthenaRequest {
  operation: string;
  input: Record<string, any>;
}

export interface AthenaStandIn {
  url: string;
  requests: AthenaRequest[];
  /** The SQL of each query started, in order. */
  queries(): string[];
  stop(): Promise<void>;
}

export async function startAthenaStandIn(o: {
  /** The stack's outputs by key, answered to DescribeStacks of `stackName`. */
  stackName: string;
  outputs: Record<string, string>;
  answer(sql: string): StandInAnswer;
  /** Rows a GetQueryResults page holds at most (the header row counts, as on Athena). */
  pageSize?: number;
}): Promise<AthenaStandIn> {
  const requests: AthenaRequest[] = [];
  const executions = new Map<string, { answer: StandInAnswer; looks: number }>();
  const json = (status: number, body: unknown) => ({
    status,
    type: 'application/x-amz-json-1.1',
    body: JSON.stringify(body),
  });
  const answerOf = (operation: string, input: Record<string, any>) => {
    requests.push({ operation, input });
    if (operation === 'StartQueryExecution') {
      const answer = o.answer(String(input.QueryString));
      if (answer.refused) return json(400, { __type: 'InvalidRequestException', Message: answer.refused });
      const id = randomUUID();
      executions.set(id, { answer, looks: 0 });
      return json(200, { QueryExecutionId: id });
    }
    const execution = executions.get(String(input.QueryExecutionId));
    if (!execution) return json(400, { __type: 'InvalidRequestException', Message: 'QueryExecution not found' });
    const { answer } = execution;
    if (operation === 'GetQueryExecution') {
      const running = execution.looks++ < (answer.running ?? 1);
      const state = running ? 'RUNNING' : (answer.ends?.state ?? 'SUCCEEDED');
      return json(200, {
        QueryExecution: {
          QueryExecutionId: input.QueryExecutionId,
          Status: { State: state, ...(running || !answer.ends ? {} : { StateChangeReason: answer.ends.reason }) },
          Statistics: { DataScannedInBytes: answer.scannedBytes ?? 0 },
        },
      });
    }
    if (operation === 'GetQueryResults') {
      const columns = answer.columns ?? [];
      // A SELECT's results start with its header row.
      const all = [columns.map((c) => c.name), ...(answer.rows ?? [])];
      const from = Number(input.NextToken ?? 0);
      const size = Math.min(Number(input.MaxResults ?? 1000), o.pageSize ?? 1000);
      const page = all.slice(from, from + size);
      const next = from + size < all.length ? String(from + size) : undefined;
      return json(200, {
        ResultSet: {
          Rows: page.map((values) => ({ Data: values.map((v) => (v === null ? {} : { VarCharValue: v })) })),
          ResultSetMetadata: { ColumnInfo: columns.map((c) => ({ Name: c.name, Label: c.name, Type: c.type })) },
        },
        ...(next ? { NextToken: next } : {}),
      });
    }
    return json(400, { __type: 'InvalidRequestException', Message: `${operation} is not served by the stand-in` });
  };
  const describeStacks = (url: URL) => {
    requests.push({ operation: 'DescribeStacks', input: Object.fromEntries(url.searchParams) });
    const name = url.searchParams.get('StackName');
    if (name !== o.stackName) {
      const message = `Stack with id ${name} does not exist`;
      return {
        status: 400,
        type: 'text/xml',
        body: `<ErrorResponse><Error><Message>${message}</Message></Error></ErrorResponse>`,
      };
    }
    const members = Object.entries(o.outputs)
      .map(([k, v]) => `<member><OutputKey>${k}</OutputKey><OutputValue>${v}</OutputValue></member>`)
      .join('');
    return {
      status: 200,
      type: 'text/xml',
      body:
        '<DescribeStacksResponse><DescribeStacksResult><Stacks><member><Outputs>' +
        `${members}</Outputs></member></Stacks></DescribeStacksResult></DescribeStacksResponse>`,
    };
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://stand-in');
      const target = String(req.headers['x-amz-target'] ?? '');
      const out =
        url.searchParams.get('Action') === 'DescribeStacks'
          ? describeStacks(url)
          : answerOf(target.replace(/^AmazonAthena\./, ''), JSON.parse(Buffer.concat(chunks).toString() || '{}'));
      res.writeHead(out.status, { 'content-type': out.type });
      res.end(out.body);
    });
  });
  const port = await listen(server, 0, '127.0.0.1');
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    queries: () =>
      requests.filter((r) => r.operation === 'StartQueryExecution').map((r) => String(r.input.QueryString)),
    stop: () => closeServer(server, 1000),
  };
}
