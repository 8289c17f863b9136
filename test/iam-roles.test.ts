// The roles of the template, held to what the functions really call, on the local stack with IAM enforced.
// One small end-to-end scenario exercises every function (devkit/local/iam/scenario.ts). Then:
// - each statement of each role is removed in turn, and the scenario must fail with AccessDeniedException
//   for an action of that statement (a mutation test of the roles: a statement nothing needs would pass);
// - with the roles as they are, the scenario passes with nothing refused, and every action every statement
//   grants was needed by some call: a role that grants more than the code calls fails here.
// Each removal runs on a stack of its own, started for it (the roles swapped in place once it runs:
// LocalStack.iam.useRolesOf), a few at a time, while the tests with the roles as they are run on one more. A run
// ends at the first refused call. A stack of its own is a cold one: the ingest reads its secrets once per
// container (then every SECRETS_REFRESH_S, keeping the last good ones when a read fails), as deployed, so a role
// without ReadCallbackSecrets shows only on a cold container, where the first callback gets 503.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inParallel } from '../lib/in-parallel.ts';
import type { Denial } from '../devkit/local/iam/enforce.ts';
import type { PolicyStatement } from '../devkit/local/iam/policy.ts';
import { type IamScenario, SCENARIO_STACK, iamScenario } from '../devkit/local/iam/scenario.ts';
import { type LocalStack, startLocalStack } from '../devkit/local/stack.ts';
import { loadTemplate, type Template } from '../devkit/local/template.ts';

const original = loadTemplate().template;

/** A local stack with IAM enforced, the scenario against it, and the folder that announces it. */
interface ScenarioStack {
  stack: LocalStack;
  scenario: IamScenario;
  cwd: string;
}

async function startScenarioStack(): Promise<ScenarioStack> {
  const cwd = await mkdtemp(join(tmpdir(), 'callbacks-iam-'));
  try {
    const stack = await startLocalStack({ ...SCENARIO_STACK, cwd });
    // A refused call fails the run whatever follows: the run ends there rather than wait for an outcome.
    return { stack, scenario: iamScenario(stack, { pollMs: 10, stopAtFirstDenial: true }), cwd };
  } catch (err) {
    await rm(cwd, { recursive: true, force: true });
    throw err;
  }
}

async function stopScenarioStack(s: ScenarioStack): Promise<void> {
  s.scenario.close();
  await s.stack.stop();
  await rm(s.cwd, { recursive: true, force: true });
}

/** The stops under way: a stop waits for the pollers' long polls, so none is waited for before the end. */
const stopping: Promise<void>[] = [];
/** The stack of the tests with the roles as they are. */
let whole: ScenarioStack;
/** Every removal's run, each on its own stack. */
let removals: Promise<unknown> = Promise.resolve();

afterAll(async () => {
  await removals.catch(() => undefined);
  if (whole !== undefined) stopping.push(stopScenarioStack(whole));
  await Promise.all(stopping);
});

async function scenario(): Promise<{ denials: Denial[] }> {
  const first = whole.stack.iam.denials.length;
  await whole.scenario.run();
  return { denials: whole.stack.iam.denials.slice(first) };
}

interface RoleStatement {
  role: string;
  index: number;
  statement: PolicyStatement;
}

/** The functions' roles, and the managed policy the read API's callers get (output ReadApiInvokePolicyArn). */
const POLICY_HOLDERS = [
  'IngestRole',
  'WorkerRole',
  'SweeperRole',
  'ApiRole',
  'VerifierRole',
  'VerifierStoragePolicy',
  'ReadApiInvokePolicy',
];

interface Document {
  Statement: PolicyStatement[];
}

/** The policy documents of a role (its inline policies) or of a managed policy. */
function documentsOf(template: Template, holder: string): Document[] {
  const p = template.Resources[holder]!.Properties!;
  return p.PolicyDocument
    ? [p.PolicyDocument as Document]
    : (p.Policies as Array<{ PolicyDocument: Document }>).map((policy) => policy.PolicyDocument);
}

function statementsOf(template: Template): RoleStatement[] {
  return POLICY_HOLDERS.flatMap((role) =>
    documentsOf(template, role)
      .flatMap((d) => d.Statement)
      .map((statement, index) => ({ role, index, statement })),
  );
}

/** A copy of the template without one statement of one role or policy. */
function without(template: Template, role: string, index: number): Template {
  const copy = structuredClone(template);
  let at = index;
  for (const document of documentsOf(copy, role)) {
    if (at < document.Statement.length) {
      document.Statement.splice(at, 1);
      break;
    }
    at -= document.Statement.length;
  }
  return copy;
}

const actionsOf = (s: PolicyStatement) => (Array.isArray(s.Action) ? s.Action : [s.Action ?? '']);

/**
 * Statements the local stack cannot exercise, and why: KMS is called by SSM or SNS on the caller's behalf
 * (a SecureString's or an encrypted topic's key), never by the function's own SDK clients, and only with a
 * customer-managed key; the local parameters and topics have no key.
 */
const notExercisedLocally = (s: PolicyStatement) => actionsOf(s).every((a) => a.toLowerCase().startsWith('kms:'));

const label = (s: RoleStatement) => `${s.role} ${s.statement.Sid ?? `#${s.index}`}`;

/** Runs the scenario on a stack of its own under a role without one statement; the failure it must end in. */
async function failureWithout(s: RoleStatement): Promise<{ denials?: Denial[] } | undefined> {
  const own = await startScenarioStack();
  own.stack.iam.useRolesOf(without(original, s.role, s.index));
  try {
    await own.scenario.run();
    return undefined;
  } catch (err) {
    return err as { denials?: Denial[] };
  } finally {
    stopping.push(stopScenarioStack(own));
  }
}

function expectRefusedFor(s: RoleStatement, failure: { denials?: Denial[] } | undefined): void {
  expect(failure).toBeDefined();
  const refused = (failure?.denials ?? []).map((d) => d.action.toLowerCase());
  const removed = actionsOf(s.statement).map((a) => a.toLowerCase());
  expect(refused.filter((a) => removed.includes(a))).not.toEqual([]);
  expect(failure?.denials?.[0]?.message).toMatch(/^User: arn:aws:sts::\d{12}:assumed-role\/\S+ is not authorized/);
}

/** Removals run at once: each stack is mostly waiting on its emulators. */
const REMOVALS_AT_ONCE = 4;
const exercised = statementsOf(original).filter((s) => !notExercisedLocally(s.statement));
/** The failure each removal ended in, by label; the removals start before the first test. */
const failures = new Map(
  exercised.map((s) => [label(s), Promise.withResolvers<{ denials?: Denial[] } | undefined>()] as const),
);

beforeAll(async () => {
  for (const { promise } of failures.values()) promise.catch(() => undefined);
  removals = inParallel(exercised, REMOVALS_AT_ONCE, async (s) => {
    const outcome = failures.get(label(s))!;
    await failureWithout(s).then(outcome.resolve, outcome.reject);
  });
  whole = await startScenarioStack();
});

test('the scenario passes with the roles as they are, nothing refused', async () => {
  const { denials } = await scenario();
  expect(denials).toEqual([]);
  expect(whole.stack.iam.enforced).toBe(true);
});

describe('each statement of each role is needed: without it the scenario fails with AccessDeniedException', () => {
  test.each(exercised.map((s) => [label(s), s] as const))('%s', async (name, s) => {
    expectRefusedFor(s, await failures.get(name)!.promise);
  });

  test('IngestRole ReadCallbackSecrets is among them: without it the first callback gets 503', async () => {
    const failure = (await failures.get('IngestRole ReadCallbackSecrets')!.promise) as Error | undefined;
    expect(failure?.message).toMatch(/^the ingest answered 503/);
  });
});

/** `<role> <sid>: <action>` of every action a statement of `template` grants that no call so far needed. */
function unusedGrants(template: Template): string[] {
  // `<function> <action> <resource>` -> `<role>/<policy>#<sid>` of the statement that allowed it.
  const used = new Set(
    [...whole.stack.iam.grants].map(([key, source]) => `${source} ${key.split(' ')[1]!.toLowerCase()}`),
  );
  const needed = (s: RoleStatement, action: string) =>
    [...used].some(
      (u) =>
        (u.startsWith(`${s.role}/`) || u.startsWith(`${s.role}#`)) &&
        u.endsWith(`#${s.statement.Sid} ${action.toLowerCase()}`),
    );
  return statementsOf(template)
    .filter((s) => !notExercisedLocally(s.statement))
    .flatMap((s) =>
      actionsOf(s.statement)
        .filter((a) => !needed(s, a))
        .map((a) => `${label(s)}: ${a}`),
    );
}

/**
 * Granted, in the bundle, and called by no path the scenario takes: the worker's bundle holds the store class
 * it shares with the CLI, whose listings read headers in batches (the worker itself reads items one by one);
 * and the worker queries a task's partition only to recount it (a message given up after a partial write) or
 * for the keys of a file that spilled onto items of their own, which a scenario of one short lifecycle per
 * service never does (test/recount.test.ts and test/task-store.test.ts do, under no role).
 */
const GRANTED_BUT_NEVER_CALLED = [
  'WorkerRole ApplyCallbacksToTasks: dynamodb:BatchGetItem',
  'WorkerRole ApplyCallbacksToTasks: dynamodb:Query',
  // The sweeper reads the attempts of a file of a table brought over from the earlier layout in batches.
  'SweeperRole SweepTasks: dynamodb:BatchGetItem',
];

test('every action every statement grants is needed by some call of the scenario', async () => {
  await scenario();
  expect(unusedGrants(original)).toEqual(GRANTED_BUT_NEVER_CALLED);
});

test('a role that grants more than the code calls is caught', async () => {
  const wider = structuredClone(original);
  documentsOf(wider, 'WorkerRole')[0]!.Statement.push({
    Sid: 'DeleteTasks',
    Effect: 'Allow',
    Action: 'dynamodb:DeleteItem',
    Resource: 'arn:aws:dynamodb:*:*:table/*',
  });
  whole.stack.iam.useRolesOf(wider);
  try {
    await scenario();
  } finally {
    whole.stack.iam.useRolesOf(original);
  }
  expect(unusedGrants(wider).sort()).toEqual(
    [...GRANTED_BUT_NEVER_CALLED, 'WorkerRole DeleteTasks: dynamodb:DeleteItem'].sort(),
  );
});
