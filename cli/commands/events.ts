// `callbacks events tail`: the task events published to the topic. What was published so far is read from a
// queue subscribed to it (the local stack's own; for a deployed stage, one the team subscribed, given with
// --queue-url), leaving the messages there for other readers (lib/aws/sqs/event-queue.ts). `--follow` then
// reads the new ones from a queue of its own on the topic, removed when it stops (lib/aws/sqs/follow-queue.ts):
// any number of followers each see every event, and an idle one waits in a 20-second long poll.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Option, type Command } from 'commander';
import { EventQueueReader, type ReceivedEvent } from '../../lib/aws/sqs/event-queue.ts';
import {
  FollowQueue,
  TOUCH_EVERY_MS,
  followQueueName,
  isQueueMissing,
  removeStaleFollowQueues,
} from '../../lib/aws/sqs/follow-queue.ts';
import { ALL_TASK_EVENT_TYPES } from '../../lib/domain/task-events.ts';
import { errorSentence } from '../../lib/text.ts';
import { taskEventsTopicFor } from '../events-publisher.ts';
import { colorStatus, isoTime, jsonText, printable, table, type Colors } from '../format.ts';
import {
  CliError,
  onStdoutClosed,
  withCommonOptions,
  withTarget,
  type CommonOptions,
  type Context,
} from '../inspect.ts';
import { cliIo } from '../io.ts';

interface TailOptions extends CommonOptions {
  follow?: boolean;
  newOnly?: boolean;
  type?: string;
  task?: string;
  eventsTopic?: string;
}

export function register(program: Command): void {
  const events = program.command('events').description('task events published to the SNS topic');
  withCommonOptions(
    events
      .command('tail')
      .description('the task events published so far, oldest first; --follow keeps printing new ones')
      .option('--follow', 'keep printing new events until Ctrl-C, from a queue of its own on the topic')
      .option('--new-only', 'with --follow: only the events published from now on, without those published so far')
      .addOption(new Option('--type <type>', 'only events of this type').choices([...ALL_TASK_EVENT_TYPES]))
      .option('--task <id>', 'only events of this task (recordId or imageId)')
      .option(
        '--queue-url <url>',
        "an SQS queue subscribed to the task-events topic (default: the local stack's; env TASK_EVENTS_QUEUE_URL)",
      )
      .option(
        '--events-topic <arn>',
        "--follow: the task-events topic (default: the local stack's, TASK_EVENTS_TOPIC_ARN, or the stage's)",
      ),
  ).action(async (opts: TailOptions) => {
    await withTarget(opts, async (ctx) => {
      const wanted = (e: ReceivedEvent) =>
        (!opts.type || e.body.type === opts.type) && (!opts.task || e.body.task?.id === opts.task);
      const print = (batch: ReceivedEvent[]) => {
        const shown = batch.filter(wanted).sort((a, b) => (a.body.occurredAt ?? 0) - (b.body.occurredAt ?? 0));
        if (opts.json) for (const e of shown) ctx.out(jsonText(e.body));
        else if (shown.length > 0) ctx.out(renderEvents(shown, ctx.c));
        return shown.length;
      };
      const url = ctx.target.eventsQueueUrl;
      if (opts.newOnly && !opts.follow) throw new CliError('--new-only goes with --follow');
      if (opts.follow) {
        await follow(ctx, opts, opts.newOnly ? null : url, print);
        return;
      }
      if (!url) {
        throw new CliError(
          `${ctx.target.describe}: no queue subscribed to the task-events topic is known; pass --queue-url ` +
            '(an SQS queue you subscribed to the TaskEventsTopicArn output, raw delivery or not), or --follow for ' +
            'the events published from now on',
        );
      }
      const first = print(await new EventQueueReader(ctx.target.sqs, url).poll());
      if (!opts.json && first === 0) ctx.out('No task event has been published yet (or none matches).');
    });
  });
}

/**
 * Subscribes a queue of its own first (nothing published from then on is missed), prints what the shared
 * queue holds, if one is known (`historyUrl`; null with --new-only), then each new event until Ctrl-C, and
 * removes its queue on the way out.
 */
async function follow(
  ctx: Context,
  opts: TailOptions,
  historyUrl: string | null,
  print: (batch: ReceivedEvent[]) => number,
): Promise<void> {
  // The queue is made where the target's SQS is: for the local stack, on its own topic whatever
  // TASK_EVENTS_TOPIC_ARN says (it names a deployed one, or the local stack's in its own process).
  const env = ctx.target.kind === 'local' ? {} : cliIo().env;
  const { topicArn, sns } = await taskEventsTopicFor(ctx.target, opts, env);
  if (!topicArn || !sns) {
    throw new CliError(
      `${ctx.target.describe}: the task-events topic is not known; pass --events-topic (the stage's ` +
        'TaskEventsTopicArn output) or --stage',
    );
  }
  const clients = { sns, sqs: ctx.target.sqs, endpoint: ctx.target.local?.sqsEndpoint };
  const stopped = new AbortController();
  const stop = () => stopped.abort();
  const stopListening = cliIo().onStop(stop);
  // Piped into `head`: stop as on Ctrl-C, removing the queue, then print nothing more.
  const restoreStdout = onStdoutClosed(stop);
  try {
    // What followers killed before they could clean up left behind; not being allowed to is no reason to stop.
    await removeStaleFollowQueues(clients, topicArn).catch((err: unknown) => {
      cliIo().stderr.write(`callbacks: stale follow queues not removed: ${printable(errorSentence(err))}\n`);
    });
    const name = followQueueName(topicArn, { host: hostname(), pid: process.pid }, randomBytes(3).toString('hex'));
    const queue = await FollowQueue.open(clients, topicArn, name);
    try {
      // An event both in the history and in the new queue (published meanwhile) is printed once.
      const printed = new Set<string>();
      if (historyUrl) {
        const past = await new EventQueueReader(ctx.target.sqs, historyUrl).poll();
        for (const e of past) printed.add(e.body.id);
        print(past);
      }
      let touchedAt = Date.now();
      while (!stopped.signal.aborted) {
        let batch: ReceivedEvent[];
        try {
          batch = await queue.receive(stopped.signal);
        } catch (err) {
          if (stopped.signal.aborted) break;
          if (isQueueMissing(err)) {
            throw new CliError(
              `the follow queue ${name} was removed (a follower silent for an hour counts as gone): run again`,
            );
          }
          throw err;
        }
        if (!stopped.signal.aborted) print(batch.filter((e) => !printed.has(e.body.id)));
        if (Date.now() - touchedAt >= TOUCH_EVERY_MS) {
          await queue.touch();
          touchedAt = Date.now();
        }
      }
    } finally {
      await queue.close().catch((err: unknown) => {
        cliIo().stderr.write(`callbacks: follow queue ${name} not removed: ${printable(errorSentence(err))}\n`);
      });
    }
  } finally {
    stopListening();
    restoreStdout();
    sns.destroy();
  }
}

export function renderEvents(events: readonly ReceivedEvent[], c: Colors): string {
  const rows = events.map(({ body }) => {
    const task = body.task as { service?: string; id?: string; status?: string } | undefined;
    const file = body.file as { fileName?: string } | undefined;
    return [
      isoTime(body.occurredAt ?? null),
      body.type,
      `${task?.service ?? '?'} ${task?.id ?? '?'}`,
      file?.fileName ?? '',
      colorStatus(task?.status ?? '', c),
      c.dim(body.id),
    ];
  });
  return table(['occurred', 'type', 'task', 'file', 'status', 'id'], rows, c);
}
