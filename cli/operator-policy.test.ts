// The operator policy docs/cli-operations.md gives ("Permissions against a stage") against what the CLI's
// commands can send to a stage, read from their bundles as the functions' roles are (infra/serverless.test.ts).
// A command's bundle holds every request of the command (its subcommands share their modules), so the
// check is on the policy as a whole: every action some command sends is in it, and it holds no other.
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultSecretsParam } from './secrets.ts';
import { stageAlarmPrefix, stageFunctionName } from './stage-insight.ts';
import { resourceNames } from '../lib/local/deployed-settings.ts';
import { bundleRequests, functionBuildOptions, iamAction } from '../test/support/sdk-requests.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

interface PolicyStatement {
  Sid: string;
  Effect: string;
  Action: string | string[];
  Resource: string | string[];
  Condition?: { StringEquals: Record<string, string> };
}

const list = (v: string | string[]) => (Array.isArray(v) ? v : [v]);

/** The JSON policy of the section "Permissions against a stage". */
function documentedPolicy(): PolicyStatement[] {
  const page = readFileSync(join(root, 'docs/cli-operations.md'), 'utf8');
  const section = page.split('\n## Permissions against a stage\n')[1]!.split('\n## ')[0]!;
  const json = /```json\n([\s\S]*?)\n```/.exec(section);
  if (!json) throw new Error('docs/cli-operations.md: no JSON policy under "Permissions against a stage"');
  return JSON.parse(json[1]!).Statement;
}

/** Every command but `dev`, which starts the local stack and talks to its emulators only. */
const stageCommands = readdirSync(join(root, 'cli/commands'))
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && f !== 'dev.ts')
  .map((f) => basename(f, '.ts'));

let sent: Set<string>;
let namesIndex: boolean;

beforeAll(async () => {
  const options = await functionBuildOptions();
  sent = new Set();
  namesIndex = false;
  for (const command of stageCommands) {
    const requests = await bundleRequests(join(root, 'cli/commands', `${command}.ts`), options, root);
    for (const c of requests.sent) {
      const action = iamAction(c);
      if (action !== null) sent.add(action);
    }
    namesIndex ||= requests.namesIndex;
  }
}, 180_000);

test('the operator policy allows exactly the actions the commands against a stage send, and their keys', () => {
  const policy = documentedPolicy();
  for (const s of policy) expect(s.Effect).toBe('Allow');
  const byVia = (via: string) =>
    policy
      .filter((s) => s.Condition?.StringEquals['kms:ViaService'] === `${via}.<region>.amazonaws.com`)
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
      arn('dynamodb', `table/${names.table}`),
      arn('dynamodb', `table/${names.table}/index/*`),
      arn('sqs', names.queue),
      arn('sqs', names.deadLetterQueue),
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
      arn('kms', 'key/*'),
    ].sort(),
  );
});
