// `callbacks doctor`: the checks to run before `serverless deploy`. It packages the template (or takes the
// cached copy), runs cfn-lint on it when cfn-lint is installed, then runs the local stack from it with IAM
// enforced and a small scenario that makes every function call what it calls in service
// (devkit/local/iam/scenario.ts), and reports for each function the calls it made and the statement of its
// role that allowed each one. A call no statement allows is a gap: deployed, it would be refused. The archive has a
// check of its own: the template's stream is the one the worker's ARCHIVE_STREAM names, the worker's role lets it
// write there, and on the local stack the Firehose stand-in took the scenario's lines into the archive's bucket.
import { spawnSync } from 'node:child_process';
import { S3Client } from '@aws-sdk/client-s3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCAL_CREDENTIALS } from './deployed-settings.ts';
import { SCENARIO_STACK, iamScenario } from './iam/scenario.ts';
import { archivedLines } from './stack-archive.ts';
import { type LocalStack, startLocalStack } from './stack.ts';
import { loadTemplate, type Template } from './template.ts';
import { errorSentence } from '../../lib/text.ts';

export const CFN_LINT_INSTALL = 'pip install cfn-lint';

export type CfnLintResult =
  | { installed: false }
  | { installed: true; version: string; exitCode: number; errors: boolean; output: string };

/**
 * cfn-lint on the template, when installed. Its exit code is a bit set: 2 errors, 4 warnings, 8
 * informational; only errors count against the template (osls' own resources draw a few warnings).
 */
export function runCfnLint(templatePath: string, env: NodeJS.ProcessEnv = process.env): CfnLintResult {
  const version = spawnSync('cfn-lint', ['--version'], { encoding: 'utf8', env });
  if (version.error || version.status !== 0) return { installed: false };
  const run = spawnSync('cfn-lint', [templatePath], { encoding: 'utf8', env, maxBuffer: 16 << 20 });
  const exitCode = run.status ?? 1;
  return {
    installed: true,
    version: version.stdout.trim(),
    exitCode,
    // 1 is cfn-lint failing to run at all.
    errors: exitCode === 1 || (exitCode & 2) !== 0,
    output: `${run.stdout ?? ''}${run.stderr ?? ''}`.trim(),
  };
}

export interface FunctionCall {
  action: string;
  resource: string;
  /** The statement that allowed it (`<role>/<policy>#<sid>`), or null: refused. */
  grantedBy: string | null;
}

/** The archive's check (docs/archive.md). */
export interface ArchiveCheck {
  /** The template's archive stream, by name; null: the template has none. */
  stream: string | null;
  /** The stream the worker archives to (its ARCHIVE_STREAM); empty: none. */
  workerStream: string;
  /** The statement that let the worker's PutRecordBatch through, or null: refused, or never made. */
  grantedBy: string | null;
  /** Lines the Firehose stand-in wrote to the archive's bucket during the scenario. */
  linesArchived: number;
  ok: boolean;
}

export interface DoctorReport {
  template: { hash: string; path: string; packaged: boolean };
  cfnLint: CfnLintResult;
  functions: Array<{ key: string; role: string; calls: FunctionCall[] }>;
  archive: ArchiveCheck;
  /** The scenario's failure, if it failed. */
  scenarioError: string | null;
  /** Calls no statement allows. */
  gaps: number;
  ok: boolean;
}

export interface DoctorOptions {
  /** Check these roles instead of the template's (the stack still runs the packaged template). */
  rolesFrom?: Template;
  env?: NodeJS.ProcessEnv;
}

export async function runDoctor(opts: DoctorOptions = {}): Promise<DoctorReport> {
  const loaded = loadTemplate();
  const cfnLint = runCfnLint(loaded.path, opts.env);
  const cwd = await mkdtemp(join(tmpdir(), 'callbacks-doctor-'));
  // The demo secrets and the defaults of the stage parameters, whatever this shell sets.
  const stack = await startLocalStack({ ...SCENARIO_STACK, cwd, env: {} });
  const scenario = iamScenario(stack);
  let scenarioError: string | null = null;
  let linesArchived = 0;
  try {
    if (opts.rolesFrom) stack.iam.useRolesOf(opts.rolesFrom);
    await scenario.run();
  } catch (err) {
    scenarioError = errorSentence(err);
  } finally {
    linesArchived = await countArchived(stack);
    scenario.close();
    await stack.stop();
    await rm(cwd, { recursive: true, force: true });
  }
  const functions = stack.settings.functions.map((fn) => {
    const calls = new Map<string, FunctionCall>();
    for (const [key, source] of stack.iam.grants) {
      const [session, action, resource] = key.split(' ') as [string, string, string];
      if (session === fn.functionName) calls.set(`${action} ${resource}`, { action, resource, grantedBy: source });
    }
    for (const denial of stack.iam.denials) {
      if (denial.principal.endsWith(`/${fn.functionName}`))
        calls.set(`${denial.action} ${denial.resource}`, {
          action: denial.action,
          resource: denial.resource,
          grantedBy: null,
        });
    }
    const sorted = [...calls.values()].sort((a, b) => a.action.localeCompare(b.action));
    return { key: fn.key, role: fn.roleLogicalId, calls: sorted };
  });
  const gaps = functions.reduce((n, fn) => n + fn.calls.filter((c) => c.grantedBy === null).length, 0);
  const archive = archiveCheck(stack, functions, linesArchived);
  return {
    template: { hash: loaded.hash, path: loaded.path, packaged: loaded.packaged },
    cfnLint,
    functions,
    archive,
    scenarioError,
    gaps,
    ok: gaps === 0 && scenarioError === null && archive.ok && !(cfnLint.installed && cfnLint.errors),
  };
}

/** The lines the stand-in wrote to the stack's archive (0 without one, or when its bucket cannot be read). */
async function countArchived(stack: LocalStack): Promise<number> {
  const archive = stack.info.archive;
  if (!archive) return 0;
  const s3 = new S3Client({
    endpoint: stack.info.sqsEndpoint,
    region: stack.info.region,
    credentials: LOCAL_CREDENTIALS,
    forcePathStyle: true,
  });
  try {
    return (await archivedLines(s3, archive.bucket, archive.prefix)).length;
  } catch {
    return 0;
  } finally {
    s3.destroy();
  }
}

/** The archive's check, from the stack and the worker's calls the scenario made. */
function archiveCheck(stack: LocalStack, functions: DoctorReport['functions'], linesArchived: number): ArchiveCheck {
  const stream = stack.archive?.stream.name ?? null;
  const workerStream = stack.settings.functions.find((f) => f.key === 'worker')?.environment.ARCHIVE_STREAM ?? '';
  const put = functions
    .find((f) => f.key === 'worker')
    ?.calls.find((c) => c.action === 'firehose:PutRecordBatch' && c.resource.endsWith(`/${stream}`));
  const grantedBy = put?.grantedBy ?? null;
  const ok = stream !== null && workerStream === stream && grantedBy !== null && linesArchived > 0;
  return { stream, workerStream, grantedBy, linesArchived, ok };
}
