// The sweeper's settings from the environment and what it builds from them, once per container. Every value is
// checked at load: a bad one stops the function with one sentence naming the variable.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type ClientSettings, clientConfigOf, functionClient } from '../aws/clients.ts';
import { TableClient } from '../aws/dynamo/table/table-client.ts';
import { TaskSweeps } from '../aws/dynamo/time/task-sweeps.ts';
import { eventPublisherTo } from '../aws/sns/task-events.ts';
import { duration, envSchema, readEnvironment, text } from '../config/read-env.ts';
import { timeSettingsOf, timeVariables } from '../config/time-settings.ts';
import { createLogger, type Logger, logLevelFrom } from '../log.ts';
import { errorSentence } from '../text.ts';
import type { SweeperDeps } from './sweep.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** How far back the first sweep of a table reads (then it goes on from where the last one stopped). */
const DEFAULT_LOOK_BACK_MS = 86_400_000;

/** The sweeper's environment. */
export const sweeperEnvironment = envSchema('sweeper', {
  TASKS_TABLE: { value: text, invalid: 'refuse' },
  /** Where the events of the facts of time go; unset, none are published. */
  TASK_EVENTS_TOPIC_ARN: { value: text, default: '', invalid: 'refuse' },
  SWEEP_LOOK_BACK: {
    value: duration('a duration such as 1d or 6h'),
    default: DEFAULT_LOOK_BACK_MS,
    invalid: 'refuse',
  },
  ...timeVariables,
});

/** The sweeper's dependencies, built once at module load. Throws on a bad setting, after logging it. */
export function buildSweeperDependencies(
  env: Env,
  log: Logger = createLogger('sweeper', logLevelFrom(env)),
  clients: ClientSettings = {},
): SweeperDeps {
  let settings: ReturnType<typeof readEnvironment<typeof sweeperEnvironment.variables>>['settings'];
  try {
    settings = readEnvironment(sweeperEnvironment, env).settings;
  } catch (err) {
    log.error('sweeper_config', { error: errorSentence(err, { bare: true, max: Number.POSITIVE_INFINITY }) });
    throw err;
  }
  const timeouts = { connectionTimeout: 1000, requestTimeout: 5000, throwOnRequestTimeout: true };
  const client = functionClient(
    new DynamoDBClient({ ...clientConfigOf('dynamodb', clients), maxAttempts: 3, requestHandler: timeouts }),
  );
  const events = eventPublisherTo(settings.TASK_EVENTS_TOPIC_ARN, {
    ...clientConfigOf('sns', clients),
    requestHandler: timeouts,
  });
  return {
    sweeps: new TaskSweeps(new TableClient(client, settings.TASKS_TABLE)),
    time: timeSettingsOf(settings),
    lookBackMs: settings.SWEEP_LOOK_BACK,
    log,
    ...(events ? { events } : {}),
  };
}
