// `callbacks doctor`: cfn-lint when installed, and each function's calls held to its role on the local
// stack; a call without a grant (the worker's Query before it was granted) makes it fail.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeReport } from '../cli/commands/doctor.ts';
import { colorsFor } from '../cli/format.ts';
import { CFN_LINT_INSTALL, runCfnLint, runDoctor } from '../devkit/local/doctor.ts';
import type { PolicyStatement } from '../devkit/local/iam/policy.ts';
import { loadTemplate } from '../devkit/local/template.ts';
import { runCli } from './support/cli-process.ts';

let bin: string;

/** A cfn-lint on a PATH of its own that prints `version` and ends with `exitCode` on a template. */
function fakeCfnLint(exitCode: number): NodeJS.ProcessEnv {
  writeFileSync(
    join(bin, 'cfn-lint'),
    '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "cfn-lint 9.9.9"; exit 0; fi\n' +
      `echo "E3001 checked $1"\nexit ${exitCode}\n`,
  );
  chmodSync(join(bin, 'cfn-lint'), 0o755);
  return { ...process.env, PATH: bin };
}

beforeAll(() => {
  bin = mkdtempSync(join(tmpdir(), 'cfn-lint-'));
});
afterAll(() => rmSync(bin, { recursive: true, force: true }));

test('cfn-lint: skipped when it is not installed, its errors count, its warnings do not', () => {
  const path = loadTemplate().path;
  expect(runCfnLint(path, { PATH: join(bin, 'nothing') })).toEqual({ installed: false });
  expect(CFN_LINT_INSTALL).toBe('pip install cfn-lint');
  expect(runCfnLint(path, fakeCfnLint(2))).toEqual({
    installed: true,
    version: 'cfn-lint 9.9.9',
    exitCode: 2,
    errors: true,
    output: `E3001 checked ${path}`,
  });
  expect(runCfnLint(path, fakeCfnLint(4))).toMatchObject({ installed: true, exitCode: 4, errors: false });
});

test('a worker role without dynamodb:UpdateItem: the doctor names the call without a grant, and fails', async () => {
  const template = structuredClone(loadTemplate().template);
  const policies = template.Resources.WorkerRole!.Properties!.Policies as Array<{
    PolicyDocument: { Statement: PolicyStatement[] };
  }>;
  for (const s of policies[0]!.PolicyDocument.Statement)
    if (Array.isArray(s.Action)) s.Action = s.Action.filter((a) => a !== 'dynamodb:UpdateItem');
  const report = await runDoctor({ rolesFrom: template, env: fakeCfnLint(0) });
  expect(report.ok).toBe(false);
  expect(report.gaps).toBeGreaterThanOrEqual(1);
  const worker = report.functions.find((f) => f.key === 'worker')!;
  expect(worker.calls).toContainEqual({
    action: 'dynamodb:UpdateItem',
    resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/rtc-callbacks-receiver-local-tasks',
    grantedBy: null,
  });
  expect(worker.calls).toContainEqual(
    expect.objectContaining({ action: 'dynamodb:PutItem', grantedBy: 'WorkerRole/worker#ApplyCallbacksToTasks' }),
  );
  expect(report.scenarioError).toMatch(/is not authorized to perform: dynamodb:UpdateItem/);
});

test('callbacks doctor on the template as it is: every call granted, exit code 0', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'doctor-cli-'));
  try {
    const run = await runCli(['doctor', '--json'], { cwd, env: { PATH: bin } });
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({ ok: true, gaps: 0, scenarioError: null });
    expect(report.functions.map((f: { key: string }) => f.key).sort()).toEqual([
      'api',
      'ingest',
      'sweeper',
      'verifier',
      'worker',
    ]);
    for (const fn of report.functions) expect(fn.calls.length).toBeGreaterThan(0);
    // The archive: the template's stream is the worker's, its role lets it write there, the stand-in took the lines.
    expect(report.archive).toEqual({
      stream: 'rtc-callbacks-receiver-local-archive',
      workerStream: 'rtc-callbacks-receiver-local-archive',
      grantedBy: 'WorkerRole/worker#ArchiveCallbacks',
      linesArchived: expect.any(Number),
      ok: true,
    });
    expect(report.archive.linesArchived).toBeGreaterThan(0);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test('a worker role that may not write the archive: the doctor says it is not written, and fails', async () => {
  const template = structuredClone(loadTemplate().template);
  const policies = template.Resources.WorkerRole!.Properties!.Policies as Array<{
    PolicyDocument: { Statement: PolicyStatement[] };
  }>;
  const statements = policies[0]!.PolicyDocument.Statement;
  statements.splice(
    statements.findIndex((s) => s.Sid === 'ArchiveCallbacks'),
    1,
  );
  const report = await runDoctor({ rolesFrom: template, env: fakeCfnLint(0) });
  expect(report.ok).toBe(false);
  expect(report.archive).toMatchObject({
    stream: 'rtc-callbacks-receiver-local-archive',
    workerStream: 'rtc-callbacks-receiver-local-archive',
    grantedBy: null,
    linesArchived: 0,
    ok: false,
  });
  expect(report.functions.find((f) => f.key === 'worker')!.calls).toContainEqual({
    action: 'firehose:PutRecordBatch',
    resource: 'arn:aws:firehose:us-east-1:000000000000:deliverystream/rtc-callbacks-receiver-local-archive',
    grantedBy: null,
  });
  const said = describeReport(report, colorsFor({ color: false }));
  expect(said).toContain(
    'archive  stream rtc-callbacks-receiver-local-archive: the worker archives to it, PutRecordBatch NOT GRANTED, ' +
      'the local stand-in archived nothing',
  );
  expect(said).toMatch(/call\(s\) without a grant, the archive not written\.\n$/);
});
