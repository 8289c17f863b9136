// `callbacks doctor`: the checks to run before `serverless deploy`. It packages the template (or takes the
// cached copy), runs cfn-lint on it when cfn-lint is installed, then runs the local stack from it with IAM
// enforced and a small scenario that makes every function call what it calls in service
// (devkit/local/iam/scenario.ts), and reports for each function the calls it made and the statement of its
// role that allowed each one. A call no statement allows is a gap: deployed, it would be refused.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SCENARIO_STACK, iamScenario } from './iam/scenario.ts';
import { startLocalStack } from './stack.ts';
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

export interface DoctorReport {
  template: { hash: string; path: string; packaged: boolean };
  cfnLint: CfnLintResult;
  functions: Array<{ key: string; role: string; calls: FunctionCall[] }>;
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
  try {
    if (opts.rolesFrom) stack.iam.useRolesOf(opts.rolesFrom);
    await scenario.run();
  } catch (err) {
    scenarioError = errorSentence(err);
  } finally {
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
  return {
    template: { hash: loaded.hash, path: loaded.path, packaged: loaded.packaged },
    cfnLint,
    functions,
    scenarioError,
    gaps,
    ok: gaps === 0 && scenarioError === null && !(cfnLint.installed && cfnLint.errors),
  };
}
