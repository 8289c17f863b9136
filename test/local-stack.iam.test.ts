// The local stack's IAM checks at the edges: a role the event source mapping cannot run under stops the
// start, as Lambda refuses to create the mapping; `--no-iam` (iam: false) lets through what a role refuses.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PolicyStatement } from '../devkit/local/iam/policy.ts';
import { SCENARIO_STACK, iamScenario } from '../devkit/local/iam/scenario.ts';
import { startLocalStack } from '../devkit/local/stack.ts';
import { loadTemplate, type Template } from '../devkit/local/template.ts';

let cwd: string;
beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-iam-edges-'));
});
afterAll(() => rm(cwd, { recursive: true, force: true }));

/** The template with the worker role's statement `sid` removed. */
function withoutWorkerStatement(sid: string): Template {
  const template = structuredClone(loadTemplate().template);
  const policies = template.Resources.WorkerRole!.Properties!.Policies as Array<{
    PolicyDocument: { Statement: PolicyStatement[] };
  }>;
  for (const p of policies) p.PolicyDocument.Statement = p.PolicyDocument.Statement.filter((s) => s.Sid !== sid);
  return template;
}

test('a worker role that cannot consume the queue: the stack does not start, as the mapping is refused', async () => {
  await expect(
    startLocalStack({
      port: 0,
      memory: true,
      cwd,
      quiet: true,
      template: withoutWorkerStatement('ConsumeCallbackQueue'),
    }),
  ).rejects.toThrow(
    /^Invalid request provided: The provided execution role does not have permissions to call ReceiveMessage on SQS/,
  );
});

test('with IAM off, a worker without its table grants still applies callbacks, and nothing is refused', async () => {
  const stack = await startLocalStack({
    ...SCENARIO_STACK,
    cwd,
    iam: false,
    template: withoutWorkerStatement('ApplyCallbacksToTasks'),
  });
  const scenario = iamScenario(stack);
  try {
    expect(stack.iam.enforced).toBe(false);
    await scenario.run();
    expect(stack.iam.denials).toEqual([]);
  } finally {
    scenario.close();
    await stack.stop();
  }
});
