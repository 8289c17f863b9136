// `callbacks archive query "<SQL>"`: the SQL of the table `raw` run on the local stack's archive (DuckDB over what
// its worker archived in its S3) and on a stage's (Athena, here its stand-in: test/support/athena-stand-in.ts), the
// rows printed as a table or --json, a query that fails one sentence with exit code 1.
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { fitRows } from '../cli/commands/archive.ts';
import { colors } from '../cli/format.ts';
import { run } from '../cli/main.ts';
import { duckdbSource, queryLocalArchive } from '../devkit/local/archive.ts';
import { SERVICE } from '../devkit/local/deployed-settings.ts';
import { writeStackFile } from '../devkit/local/stack-file.ts';
import { withRawTable } from '../lib/domain/archive.ts';
import { type ArchivingStack, startArchivingStack } from './support/archive-stack.ts';
import { type AthenaStandIn, startAthenaStandIn, type StandInAnswer } from './support/athena-stand-in.ts';
import { postSigned, runCliHere } from './support/cli-process.ts';
import { terminalIo } from './support/terminal-io.ts';
import { eventually } from './support/eventually.ts';

type Body = Record<string, unknown>;
const fixture = (name: string): Body =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Body;

describe('on the local stack', () => {
  let cwd: string;
  let archiving: ArchivingStack;
  const cli = (args: string[]) => runCliHere(args, { cwd });

  beforeAll(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'callbacks-archive-query-'));
    archiving = await startArchivingStack({
      port: 0,
      memory: true,
      cwd,
      quiet: true,
      scheduleEveryMs: 0,
      // Report mode: a callback whose signature fails is accepted, and set aside.
      signatureMode: 'report',
      secrets: { 'demo-app': ['demo-secret'], 'app-2': ['secret-2'] },
    });
  }, 60_000);

  afterAll(async () => {
    await archiving?.stop();
    if (cwd) await rm(cwd, { recursive: true, force: true });
  });

  test('counts by service, type and verdict are those of the callbacks the stack took; --json types them', async () => {
    const url = archiving.stack.url;
    const recordId = 'rec-aq-1';
    const rec = (name: string) => ({ ...fixture(name), recordId });
    for (const name of ['recording-1-start-mix', 'recording-2-slice', 'recording-3-end', 'recording-4-upload-ok'])
      expect((await postSigned(url, 'recording', rec(name))).status).toBe(200);
    const shot = { ...fixture('screenshot-1-start'), appKey: 'app-2', imageId: 'img-aq-1' };
    expect((await postSigned(url, 'screenshot', shot, 'secret-2')).status).toBe(200);
    // Signed with another secret: accepted in report mode, and set aside as invalid_signature.
    expect((await postSigned(url, 'screenshot', { ...shot, imageId: 'img-aq-2' }, 'wrong')).status).toBe(200);

    const counted = async () => {
      const res = await cli([
        'archive',
        'query',
        '--json',
        'SELECT service, type, verdict, outcome, count(*) AS n FROM raw GROUP BY ALL ORDER BY service, type, verdict',
      ]);
      expect(res).toMatchObject({ code: 0, stderr: '' });
      return JSON.parse(res.stdout) as Body[];
    };
    const rows = await eventually('every callback archived', counted, (r) => r.length === 6, { timeoutMs: 30_000 });
    expect(rows).toEqual([
      { service: 'recording', type: 1, verdict: 'valid', outcome: 'applied', n: 1 },
      { service: 'recording', type: 2, verdict: 'valid', outcome: 'applied', n: 1 },
      { service: 'recording', type: 3, verdict: 'valid', outcome: 'applied', n: 1 },
      { service: 'recording', type: 4, verdict: 'valid', outcome: 'applied', n: 1 },
      { service: 'screenshot', type: 1, verdict: 'invalid', outcome: 'quarantined', n: 1 },
      { service: 'screenshot', type: 1, verdict: 'valid', outcome: 'applied', n: 1 },
    ]);
    // The raw body as received, and the columns of docs/archive.md.
    const [task] = JSON.parse(
      (
        await cli([
          'archive',
          'query',
          '--json',
          "SELECT task_id, app_key, body, resent, reason, dt FROM raw WHERE task_id = 'img-aq-2'",
        ])
      ).stdout,
    ) as Body[];
    expect(task).toEqual({
      task_id: 'img-aq-2',
      app_key: 'app-2',
      body: JSON.stringify({ ...shot, imageId: 'img-aq-2' }),
      resent: false,
      reason: 'invalid_signature',
      dt: new Date().toISOString().slice(0, 10),
    });
  });

  test('the rows as a table, with the count and where they come from', async () => {
    const res = await cli([
      'archive',
      'query',
      "SELECT task_id, type, outcome FROM raw WHERE service = 'recording' AND task_id = 'rec-aq-1' ORDER BY type",
    ]);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.stdout.split('\n')).toEqual([
      'task_id   type  outcome',
      'rec-aq-1  1     applied',
      'rec-aq-1  2     applied',
      'rec-aq-1  3     applied',
      'rec-aq-1  4     applied',
      `4 rows from the archive of the local stack at ${archiving.stack.url} (s3://${archiving.archive.bucket}/raw/).`,
      '',
    ]);
    const none = await cli(['archive', 'query', "SELECT * FROM raw WHERE task_id = 'nothing'"]);
    expect(none.stdout).toMatch(/^No rows \(the archive of the local stack at .*\)\.\n$/);
  });

  test('a query DuckDB cannot run is one sentence and exit code 1', async () => {
    const res = await cli(['archive', 'query', 'SELECT count(*) FORM raw']);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/^callbacks: the query failed: Parser Error: syntax error at or near "raw"\n$/);
    const unknown = await cli(['archive', 'query', 'SELECT nope FROM raw']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.split('\n')).toHaveLength(2);
    expect(unknown.stderr).toMatch(/^callbacks: the query failed: Binder Error: .*"nope"/);
  });
});

test('a stack that keeps no archive says so in one sentence', async () => {
  const cwd = await mkdtemp(join(tmpdir(), 'callbacks-archive-none-'));
  const { startLocalStack } = await import('../devkit/local/stack.ts');
  const stack = await startLocalStack({ port: 0, memory: true, cwd, quiet: true, scheduleEveryMs: 0 });
  // The stack file of a version without the archive.
  const { archive: _archive, ...info } = stack.info as typeof stack.info & { archive?: unknown };
  await writeStackFile(stack.stackFile, info);
  try {
    const res = await runCliHere(['archive', 'query', 'SELECT 1'], { cwd });
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(
      `callbacks: the local stack at ${stack.url} keeps no archive (its .data/stack.json names none): restart it ` +
        'with this version ("npm start")\n',
    );
  } finally {
    await stack.stop();
    await rm(cwd, { recursive: true, force: true });
  }
}, 60_000);

test("a query naming its day reads only that day's folder: raw numbers copies within service and day", async () => {
  const root = await mkdtemp(join(tmpdir(), 'callbacks-archive-days-'));
  try {
    for (const dt of ['2025-11-21', '2025-11-22', '2025-11-23']) {
      const folder = join(root, `service=recording/dt=${dt}/appKey=app-1`);
      await mkdir(folder, { recursive: true });
      const line = { delivery_id: `d-${dt}`, message_id: 'm', archived_at: `${dt}T00:00:00Z`, body: '{}' };
      await writeFile(join(folder, 'lines.gz'), gzipSync(`${JSON.stringify(line)}\n`));
    }
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      const sql = withRawTable("SELECT count(*) FROM raw WHERE dt = '2025-11-22'", duckdbSource(root));
      const plan = (await connection.runAndReadAll(`EXPLAIN ANALYZE ${sql}`)).getRows().map((r) => String(r[1]));
      expect(plan.join('\n')).toMatch(/Total Files Read: 1\b/);
      expect((await queryLocalArchive(root, "SELECT count(*) AS n FROM raw WHERE dt = '2025-11-22'")).rows).toEqual([
        { n: '1' },
      ]);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('fitted to a terminal: the widest columns are cut first, each line within its width', () => {
  const c = colors(false);
  const body = JSON.stringify(fixture('recording-4-upload-ok'));
  const result = {
    columns: ['task_id', 'type', 'body'],
    rows: [
      { task_id: 'rec-1', type: 4, body },
      { task_id: 'rec-2', type: null, body: 'short' },
    ],
  };
  const { text, cut } = fitRows(result, c, 60);
  expect(cut).toEqual(['body']);
  const lines = text.split('\n');
  for (const line of lines) expect(line.length).toBeLessThanOrEqual(60);
  expect(lines[1]).toMatch(/^rec-1 {4}4 {5}\{"timestamp":.*…$/);
  expect(lines[2]).toBe('rec-2    null  short');
  expect(fitRows(result, c, undefined)).toEqual({ text: expect.stringContaining(body), cut: [] });
});

describe('on a stage: Athena in its workgroup and database', () => {
  const stage = 'prod';
  const region = 'eu-west-1';
  let athena: AthenaStandIn;
  let answer: (sql: string) => StandInAnswer;
  let cwd: string;

  beforeAll(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'callbacks-archive-athena-'));
    athena = await startAthenaStandIn({
      stackName: `${SERVICE}-${stage}`,
      outputs: { ArchiveWorkgroupName: 'callbacks-prod-archive', ArchiveDatabaseName: 'callbacks_prod_archive' },
      answer: (sql) => answer(sql),
      pageSize: 2,
    });
  });

  afterAll(async () => {
    await athena?.stop();
    if (cwd) await rm(cwd, { recursive: true, force: true });
  });

  const env = () => ({
    AWS_ENDPOINT_URL_ATHENA: athena.url,
    AWS_ENDPOINT_URL_CLOUDFORMATION: athena.url,
    AWS_ACCESS_KEY_ID: 'operator',
    AWS_SECRET_ACCESS_KEY: 'operator-secret',
  });
  const cli = (args: string[]) =>
    runCliHere(['archive', 'query', ...args, '--stage', stage, '--region', region], { cwd, env: env() });

  const counts: StandInAnswer = {
    columns: [
      { name: 'app_key', type: 'varchar' },
      { name: 'type', type: 'integer' },
      { name: 'resent', type: 'boolean' },
      { name: 'callbacks', type: 'bigint' },
    ],
    rows: [
      ['app-1', '1', 'false', '120'],
      ['app-1', '4', 'false', '118'],
      ['app-2', '1', 'true', '7'],
      ['app-3', null, 'false', '9007199254740993'],
      ['app-4', '2', 'false', '1'],
    ],
    running: 2,
    scannedBytes: 3 * 1024 * 1024,
  };

  test('the query runs in the workgroup and database of the stack outputs; the pages are read to the end', async () => {
    answer = () => counts;
    const sql = "SELECT app_key, type, resent, count(*) AS callbacks FROM raw WHERE dt = '2025-11-22' GROUP BY 1, 2, 3";
    const res = await cli(['--json', sql]);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(res.stdout)).toEqual([
      { app_key: 'app-1', type: 1, resent: false, callbacks: 120 },
      { app_key: 'app-1', type: 4, resent: false, callbacks: 118 },
      { app_key: 'app-2', type: 1, resent: true, callbacks: 7 },
      // Beyond a JavaScript number's exact integers: kept as text.
      { app_key: 'app-3', type: null, resent: false, callbacks: '9007199254740993' },
      { app_key: 'app-4', type: 2, resent: false, callbacks: 1 },
    ]);
    const sent = athena.requests.slice(-9);
    expect(sent.map((r) => r.operation)).toEqual([
      'DescribeStacks',
      'DescribeStacks',
      'StartQueryExecution',
      'GetQueryExecution',
      'GetQueryExecution',
      'GetQueryExecution',
      'GetQueryResults',
      'GetQueryResults',
      'GetQueryResults',
    ]);
    expect(sent.slice(0, 2).map((r) => r.input.StackName)).toEqual([`${SERVICE}-${stage}`, `${SERVICE}-${stage}`]);
    const start = sent[2]!.input;
    expect(start).toMatchObject({
      WorkGroup: 'callbacks-prod-archive',
      QueryExecutionContext: { Database: 'callbacks_prod_archive' },
    });
    // `raw` defined first, over the database's table, the query after it on a line of its own.
    expect(start.QueryString).toMatch(
      /^WITH raw AS \(SELECT .* FROM "callbacks_prod_archive"\."raw"\) WHERE copy = 1\) \n/,
    );
    expect(start.QueryString.endsWith(`\n${sql}`)).toBe(true);
    // Two rows a page (the header row first): each page asked with the token of the one before.
    const pages = sent.slice(6).map((r) => r.input);
    expect(pages.map((p) => p.NextToken)).toEqual([undefined, '2', '4']);
    expect(new Set(pages.map((p) => p.QueryExecutionId)).size).toBe(1);
  });

  test('as a table, with what Athena scanned; a progress line on a terminal while it runs', async () => {
    answer = () => counts;
    const terminal = terminalIo({ cwd, env: env(), stdoutTTY: true });
    const code = await run(
      ['archive', 'query', 'SELECT 1', '--stage', stage, '--region', region, '--no-color'],
      terminal.io,
    );
    expect(code).toBe(0);
    expect(terminal.stdout().split('\n')).toEqual([
      'app_key  type  resent  callbacks',
      'app-1    1     false   120',
      'app-1    4     false   118',
      'app-2    1     true    7',
      'app-3    null  false   9007199254740993',
      'app-4    2     false   1',
      '5 rows from Athena workgroup callbacks-prod-archive of stage prod in eu-west-1 (database ' +
        'callbacks_prod_archive), 3 MiB scanned.',
      '',
    ]);
    expect(terminal.stderr()).toContain('\r\x1b[KAthena: query running, 0 s, 3 MiB scanned');
    expect(terminal.stderr().endsWith('\r\x1b[K')).toBe(true);
  });

  test("a syntax error is Athena's reason in one sentence, its line as typed; exit code 1", async () => {
    answer = () => ({ ends: { state: 'FAILED', reason: "line 2:10: mismatched input 'FORM'. Expecting: <EOF>" } });
    const res = await cli(['SELECT 1\nFROM raw FORM']);
    expect(res).toMatchObject({ code: 1, stdout: '' });
    expect(res.stderr).toBe(
      "callbacks: the query failed on Athena (FAILED): line 1:10: mismatched input 'FORM'. Expecting: <EOF>\n",
    );
    answer = () => ({ refused: 'Queries of this type are not supported' });
    expect((await cli(['DROP TABLE raw'])).stderr).toBe(
      'callbacks: the query failed on Athena (REFUSED): Queries of this type are not supported\n',
    );
  });

  test('a query the workgroup cutoff stops says so, and how to read less', async () => {
    answer = () => ({
      ends: { state: 'CANCELLED', reason: 'Bytes scanned limit was exceeded' },
      scannedBytes: 10 * 1024 ** 3,
    });
    const res = await cli(['SELECT count(*) FROM raw']);
    expect(res).toMatchObject({ code: 1, stdout: '' });
    expect(res.stderr).toBe(
      'callbacks: the query was stopped by the bytes-scanned cutoff of workgroup callbacks-prod-archive (Bytes ' +
        "scanned limit was exceeded, after 10 GiB): name the days it reads (dt = '2025-11-22', dt BETWEEN …) so " +
        'that it reads only their folders\n',
    );
  });

  test('a stack without the archive outputs is one sentence', async () => {
    const res = await runCliHere(['archive', 'query', 'SELECT 1', '--stage', 'other', '--region', region], {
      cwd,
      env: env(),
    });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(
      new RegExp(
        '^callbacks: .*looking up stack rtc-callbacks-receiver-other in eu-west-1 failed \\(400\\): ' +
          'Stack with id rtc-callbacks-receiver-other does not exist\n$',
      ),
    );
  });
});
