// The settings of the shell that runs the tests: none of them may change what a test does. A developer's shell
// may hold CALLBACK_SECRETS, a TASKS_TABLE, an AWS profile or NO_COLOR; a stack a test starts in its own process
// reads the process's environment, and a child process inherits it. So every variable the receiver, the CLI or
// the AWS SDK reads is cleared from each test file's process before it runs (jest's setupFiles:
// test/support/clear-caller-env.ts), and left out of the environment of every child process a test starts
// (childEnv, test/support/cli-process.ts). A test that wants one sets it itself.
import { apiEnvironment } from '../../lib/api/config.ts';
import { ingestEnvironment } from '../../lib/ingest/config.ts';
import { sweeperEnvironment } from '../../lib/sweeper/config.ts';
import { verifierEnvironment } from '../../lib/verifier/config.ts';
import { workerEnvironment } from '../../lib/worker/config.ts';

/** What the CLI and the local stack read besides the functions' schemas, and the colour switches of a terminal. */
const TOOL_VARIABLES = [
  'CALLBACKS_SERVICE_NAME',
  'CALLBACK_SECRETS',
  'DLQ_URL',
  'LOG_LEVEL',
  'QUEUE_URL',
  'RAW_EVENT_TTL_DAYS',
  'SIGNATURE_MODE',
  'SIGNATURE_TOLERANCE_S',
  'TASKS_TABLE',
  'TASK_EVENTS_QUEUE_URL',
  'TASK_EVENTS_TOPIC_ARN',
  'NO_COLOR',
  'FORCE_COLOR',
  'CLICOLOR',
  'CLICOLOR_FORCE',
];

const PROJECT_VARIABLES = new Set([
  ...[apiEnvironment, ingestEnvironment, sweeperEnvironment, verifierEnvironment, workerEnvironment].flatMap((s) =>
    Object.keys(s.variables),
  ),
  ...TOOL_VARIABLES,
]);

/** Whether the caller's value of `name` could change what a test does: the project's variables, and AWS's. */
export function isCallerSetting(name: string): boolean {
  return name.startsWith('AWS_') || PROJECT_VARIABLES.has(name);
}

/** `env` without the caller's settings. */
export function withoutCallerSettings(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env))
    if (value !== undefined && !isCallerSetting(name)) kept[name] = value;
  return kept;
}
