// `callbacks pull --stage S <task id>`: a deployed task's raw callbacks, copied into the local stack of this
// folder so that a production story can be replayed and stepped through on a laptop. Each stored callback
// is read with the store's events listing, signed again with the local secret of its appKey (CALLBACK_SECRETS,
// else the local demo key; the stage's secret is never needed, nor read) and posted to the local ingest as the
// platform would, in timestamp order: the local worker then builds the task from them as the stage's did.
import { Option, type Command } from 'commander';
import type { StoredEvent, TaskRef } from '../../lib/domain/task-store.ts';
import type { Service } from '../../lib/platform/services.ts';
import { readLocalStack, type LocalStackInfo } from '../../devkit/local/stack-file.ts';
import { callbackTypeName, isoTime, printable } from '../format.ts';
import { CliError, printJson, withCommonOptions, withTarget, type CommonOptions } from '../inspect.ts';
import { durationOption } from '../option-parsers.ts';
import type { Target } from '../../devkit/local/target.ts';
import { postCallback, type Answer } from './send.ts';
import { appKeyOption, oneTask } from './tasks.ts';
import { cliIo, setExitCode } from '../io.ts';
import { refusedSecretOption, senderSecrets } from '../secrets.ts';
import { allEvents } from '../../lib/domain/all-events.ts';

export interface PullOptions {
  timeout: number;
  /** Where CALLBACK_SECRETS is read from (default: the run's environment). */
  env?: Readonly<Record<string, string | undefined>>;
}

export interface PulledCallback extends Answer {
  key: string;
  type: number;
  timestamp: number;
}

export interface PullResult {
  service: Service;
  taskId: string;
  appKey: string;
  from: string;
  to: string;
  callbacks: PulledCallback[];
}

/** Copies the task `ref` of `source` into the local stack `dest`; `write` gets one line per callback posted. */
export async function pullTask(
  source: Target,
  dest: LocalStackInfo,
  ref: TaskRef,
  opts: PullOptions,
  write: (line: string) => void = () => {},
): Promise<PullResult> {
  if (source.kind === 'local') {
    throw new CliError('pull copies a task from a deployed stage into the local stack: name the stage with --stage');
  }
  const task = await oneTask(ref, () => source.tasks.getTask(ref.id, ref.appKey));
  if (!task) throw new CliError(`no task ${printable(ref.id)} in ${source.describe}`);
  const events: StoredEvent[] = (await allEvents(source.tasks, { id: task.id, appKey: task.appKey })) ?? [];
  const to = { base: dest.url, local: dest };
  // The local stack's secrets, whatever stage the task comes from.
  const secrets = senderSecrets({}, dest, opts.env);
  const sendOptions = { sign: 'header' as const, timeout: opts.timeout, secrets };
  const callbacks: PulledCallback[] = [];
  for (const e of events) {
    // The raw body as the stage received it, byte for byte: only the signature is new.
    const { answer, text } = await postCallback(task.service, e.raw, task.appKey, sendOptions, to);
    callbacks.push({ ...answer, key: e.key, type: e.type, timestamp: e.timestamp });
    const file = e.fileName ? `  ${printable(e.fileName)}` : '';
    write(
      `${callbackTypeName(e.type).padEnd(8)} ${isoTime(e.timestamp)}${file}  -> ${answer.status} ${printable(text)}`,
    );
  }
  return {
    service: task.service,
    taskId: task.id,
    appKey: task.appKey,
    from: source.describe,
    to: dest.url,
    callbacks,
  };
}

export function register(program: Command): void {
  const pull = program.command('pull <id>');
  withCommonOptions(
    pull
      .description("copy a deployed task's raw callbacks into the local stack, signed with the local secrets")
      .addOption(appKeyOption())
      .addOption(refusedSecretOption(pull, "set CALLBACK_SECRETS to the local stack's secrets"))
      .addOption(
        new Option('--timeout <duration>', 'give up on one callback after this long (10s, 2m, 500ms)')
          .argParser(durationOption)
          .default(10_000, '10s'),
      ),
  ).action(async (id: string, opts: CommonOptions & PullOptions & { appKey?: string }) => {
    const dest = readLocalStack(cliIo().cwd);
    if (!dest)
      throw new CliError('pull copies into the local stack: none is running in this folder (start it: npm start)');
    await withTarget(opts, async (ctx) => {
      const result = await pullTask(ctx.target, dest, { id, appKey: opts.appKey }, opts, (line) => {
        if (!opts.json) ctx.out(line);
      });
      const refused = result.callbacks.filter((c) => c.status < 200 || c.status >= 300).length;
      if (opts.json) printJson(result);
      else {
        ctx.out(
          `${result.callbacks.length} callbacks of ${result.service} task ${printable(result.taskId)} (appKey ` +
            `${printable(result.appKey)}) from ${printable(result.from)} posted to ${result.to}` +
            `${refused ? `; ${refused} not accepted` : '; all accepted'}.`,
        );
      }
      if (refused) setExitCode(1);
    });
  });
}
