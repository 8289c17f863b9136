// `callbacks events tail`: the task events published to the topic, read from a queue subscribed to it
// (the local stack's own; for a deployed stage, one the team subscribed, given with --queue-url). Reading
// leaves the messages in the queue for other readers (lib/aws/sqs/event-queue.ts).
import { Option, type Command } from 'commander';
import { EventQueueReader, type ReceivedEvent } from '../../lib/aws/sqs/event-queue.ts';
import { TASK_EVENT_TYPES } from '../../lib/domain/task-events.ts';
import { colorStatus, isoTime, jsonText, table, type Colors } from '../format.ts';
import { CliError, withCommonOptions, withTarget, type CommonOptions } from '../inspect.ts';

interface TailOptions extends CommonOptions {
  follow?: boolean;
  type?: string;
  task?: string;
}

/** Seconds each receive waits for a message while following. */
const FOLLOW_WAIT_S = 2;

export function register(program: Command): void {
  const events = program.command('events').description('task events published to the SNS topic');
  withCommonOptions(
    events
      .command('tail')
      .description('the task events published so far, oldest first; --follow keeps printing new ones')
      .option('--follow', 'keep reading until Ctrl-C')
      .addOption(new Option('--type <type>', 'only events of this type').choices([...TASK_EVENT_TYPES]))
      .option('--task <id>', 'only events of this task (recordId or imageId)')
      .option(
        '--queue-url <url>',
        "an SQS queue subscribed to the task-events topic (default: the local stack's; env TASK_EVENTS_QUEUE_URL)",
      ),
  ).action(async (opts: TailOptions) => {
    await withTarget(opts, async (ctx) => {
      const url = ctx.target.eventsQueueUrl;
      if (!url) {
        throw new CliError(
          `${ctx.target.describe}: no queue subscribed to the task-events topic is known; pass --queue-url ` +
            '(an SQS queue you subscribed to the TaskEventsTopicArn output, raw delivery or not)',
        );
      }
      const reader = new EventQueueReader(ctx.target.sqs, url);
      const wanted = (e: ReceivedEvent) =>
        (!opts.type || e.body.type === opts.type) && (!opts.task || e.body.task?.id === opts.task);
      const print = (batch: ReceivedEvent[]) => {
        const shown = batch.filter(wanted).sort((a, b) => (a.body.occurredAt ?? 0) - (b.body.occurredAt ?? 0));
        if (opts.json) for (const e of shown) ctx.out(jsonText(e.body));
        else if (shown.length > 0) ctx.out(renderEvents(shown, ctx.c));
        return shown.length;
      };
      const first = print(await reader.poll());
      if (!opts.follow) {
        if (!opts.json && first === 0) ctx.out('No task event has been published yet (or none matches).');
        return;
      }
      let stopped = false;
      const stop = () => {
        stopped = true;
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      while (!stopped) print(await reader.poll(FOLLOW_WAIT_S));
    });
  });
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
