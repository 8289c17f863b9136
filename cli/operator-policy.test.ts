// The operator policy docs/cli-operations.md gives ("Permissions against a stage") against what the CLI's
// commands can send to a stage, read from their bundles as the functions' roles are (infra/serverless.test.ts).
// A command's bundle holds every request of the command (its subcommands share their modules), so the
// check is on the policy as a whole: every action some command sends is in it, and it holds no other.
import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultSecretsParam } from './secrets.ts';
import { stageAlarmPrefix, stageFunctionName } from './stage-insight.ts';
import { resourceNames } from '../devkit/local/deployed-settings.ts';
import { operatorStatements } from '../devkit/local/iam/operator-policy.ts';
import type { PolicyStatement } from '../devkit/local/iam/policy.ts';
import { bundleRequestsOfEach, functionBuildOptions, iamAction } from '../test/support/sdk-requests.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

const list = (v: string | readonly string[] | undefined) =>
  v === undefined ? [] : Array.isArray(v) ? v : [v as string];

/** The service a statement's condition limits it to (`kms:ViaService`), if any. */
const viaService = (s: PolicyStatement) =>
  (s.Condition as { StringEquals?: Record<string, string> } | undefined)?.StringEquals?.['kms:ViaService'];

/** The operator policy as the page gives it, its placeholders left as they are. */
function documentedPolicy(): PolicyStatement[] {
  const placeholders = { region: '<region>', account: '<account>', stage: '<stage>', eventsQueue: '<events-queue>' };
  return operatorStatements(placeholders, root).map((s) => s.statement);
}

/** Every command but `dev` and `doctor`, which start a local stack and talk to its emulators only. */
const stageCommands = readdirSync(join(root, 'cli/commands'))
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && f !== 'dev.ts' && f !== 'doctor.ts')
  .map((f) => basename(f, '.ts'));

let sent: Set<string>;
let namesIndex: boolean;

beforeAll(async () => {
  // DuckDB queries the local stack's archive only: its native bindings are no request to a stage.
  const built = await functionBuildOptions();
  const options = { ...built, external: [...(built.external ?? []), '@duckdb/*'] };
  sent = new Set();
  namesIndex = false;
  const entries = stageCommands.map((command) => join(root, 'cli/commands', `${command}.ts`));
  for (const requests of await bundleRequestsOfEach(entries, options, root)) {
    for (const c of requests.sent) {
      // S3 is asked only on the local stack, in the others' parts: the emulator stores the files as the platform
      // would, and a local probe stands in for the verifier's (against a stage, the verifier probes).
      if (c.service === 's3') continue;
      const action = iamAction(c);
      if (action !== null) sent.add(action);
    }
    namesIndex ||= requests.namesIndex;
    // cli/stack-outputs.ts signs its one DescribeStacks call itself, without an SDK command: the bundle names it.
    if (requests.code.includes('DescribeStacks')) sent.add('cloudformation:DescribeStacks');
  }
}, 180_000);

test('the operator policy allows exactly the actions the commands against a stage send, and their keys', () => {
  const policy = documentedPolicy();
  for (const s of policy) expect(s.Effect).toBe('Allow');
  const byVia = (via: string) =>
    policy
      .filter((s) => viaService(s) === `${via}.<region>.amazonaws.com`)
      .flatMap((s) => list(s.Action))
      .sort();
  const allowed = new Set(policy.filter((s) => !s.Condition).flatMap((s) => list(s.Action)));
  expect([...allowed].sort()).toEqual([...sent].sort());
  expect(sent.size).toBeGreaterThan(5);
  // The keys SNS and Parameter Store use on the operator's behalf: the topic's to publish, the secret's to read.
  expect(byVia('sns')).toEqual(sent.has('sns:Publish') ? ['kms:Decrypt', 'kms:GenerateDataKey'] : []);
  expect(byVia('ssm')).toEqual(sent.has('ssm:GetParameter') ? ['kms:Decrypt'] : []);
  // The listings query the indexes.
  expect(namesIndex).toBe(true);
  const queries = policy.filter((s) => list(s.Action).includes('dynamodb:Query')).flatMap((s) => list(s.Resource));
  expect(queries.some((r) => r.endsWith('/index/*'))).toBe(true);
});

test("the operator policy names the stage's own table, queues, topic and secrets parameter", () => {
  const names = resourceNames('<stage>');
  const resources = documentedPolicy().flatMap((s) => list(s.Resource));
  const arn = (service: string, resource: string) => `arn:aws:${service}:<region>:<account>:${resource}`;
  expect(resources.sort()).toEqual(
    [
      // Read (ReadTasks), and written by the commands that apply and recount (ApplyAndRecountTasks).
      arn('dynamodb', `table/${names.table}`),
      arn('dynamodb', `table/${names.table}`),
      arn('dynamodb', `table/${names.table}/index/*`),
      // The callback queue and its dead-letter queue, whatever their suffix.
      arn('sqs', `${names.table.replace(/-tasks$/, '')}-callbacks*`),
      arn('sqs', '<events-queue>'),
      arn('sns', names.eventsTopic),
      // events tail --follow: subscribing to the topic, and queues of its own (ListQueues takes no resource).
      arn('sns', names.eventsTopic),
      arn('sqs', `${names.eventsTopic}-follow-*`),
      '*',
      '<TopicsKeyArn>',
      arn('ssm', `parameter${defaultSecretsParam('<stage>', {})}`),
      // status: the stage's alarms, the queue-age metric (no resource) and the ingest's configuration.
      arn('cloudwatch', `alarm:${stageAlarmPrefix('<stage>')}*`),
      '*',
      arn('lambda', `function:${stageFunctionName('<stage>', 'ingest')}`),
      // storage probe: the stage's verifier.
      arn('lambda', `function:${stageFunctionName('<stage>', 'verifier')}`),
      arn('kms', 'key/*'),
      // console, archive query and replay: the stage's stack outputs; the archive's queries, in its workgroup.
      arn('cloudformation', `stack/${names.table.replace(/-tasks$/, '')}/*`),
      arn('athena', `workgroup/${names.table.replace(/-tasks$/, '')}-archive`),
      // What Athena reads and writes with the operator's credentials, and only through Athena (aws:CalledVia).
      arn('glue', 'catalog'),
      arn('glue', 'database/<ArchiveDatabaseName>'),
      arn('glue', 'table/<ArchiveDatabaseName>/raw'),
      'arn:aws:s3:::<ArchiveBucketName>',
      'arn:aws:s3:::<ArchiveBucketName>/raw/*',
      'arn:aws:s3:::<ArchiveBucketName>/athena-results/*',
      'arn:aws:s3:::<ArchiveBucketName>/athena-results/*',
    ].sort(),
  );
});
