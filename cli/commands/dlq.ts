// `callbacks dlq list|redrive`: the callbacks the worker gave up on, each with the error it gave up on (the note
// the worker wrote: lib/worker/message-notes.ts), and sending them back to the main queue once the cause is fixed,
// then, with --wait, how each copy came out. The SQS work is in lib/aws/sqs/dlq.ts; both queues are FIFO.
import { SingleBar } from 'cli-progress';
import { Option, type Command } from 'commander';
import { readMessageNotes } from '../../lib/aws/dynamo/write/message-notes.ts';
import { TableReader } from '../../lib/aws/dynamo/table/table-client.ts';
import { peekDeadLetters, queueDepth, redriveDeadLetters } from '../../lib/aws/sqs/dlq.ts';
import type { MessageNote } from '../../lib/domain/message-notes.ts';
import { TargetError, type Target } from '../../devkit/local/target.ts';
import { waitedLine, waitForCopies } from '../copies-outcome.ts';
import { callbackTypeName, type Colors, isoTime, plural, styled, table } from '../format.ts';
import {
  CliError,
  confirm,
  printJson,
  withCommonOptions,
  withTarget,
  type CommonOptions,
  type Context,
} from '../inspect.ts';
import { durationOption, positiveInt } from '../option-parsers.ts';
import { cliIo, setExitCode } from '../io.ts';

export function register(program: Command): void {
  const dlq = program.command('dlq').description('the dead-letter queue: messages the worker could not apply');

  withCommonOptions(
    dlq
      .command('list')
      .description('dead-lettered messages, oldest first, left in place')
      .option('--limit <n>', 'at most this many messages', positiveInt, 100),
  ).action(async (opts: CommonOptions & { limit: number }) => {
    await withTarget(opts, async (ctx) => {
      const dlqUrl = await urlOf(ctx.target, 'dlq');
      const messages = await peekDeadLetters(ctx.target.sqs, dlqUrl, { limit: opts.limit });
      const notes = await readMessageNotes(
        tableOf(ctx),
        messages.map((m) => m.messageId),
      );
      if (opts.json) {
        printJson(messages.map((m) => ({ ...m, lastError: lastErrorOf(notes.get(m.messageId)) })));
        return;
      }
      if (messages.length === 0) {
        ctx.out(`The dead-letter queue is empty (${dlqUrl}).`);
        return;
      }
      // Each message's row, then why the worker gave it up, on a line of its own.
      const rows = table(
        ['MESSAGE ID', 'SENT', 'RECEIVES', 'SERVICE', 'APP KEY', 'TYPE', 'TASK'],
        messages.map((m) => [
          m.messageId,
          isoTime(m.sentAt),
          m.receiveCount === null ? '-' : String(m.receiveCount),
          m.service ?? '-',
          m.appKey ?? '-',
          m.type === null ? '-' : callbackTypeName(m.type),
          m.taskId ?? '-',
        ]),
        ctx.c,
      ).split('\n');
      ctx.out(
        [
          rows[0]!,
          ...messages.flatMap((m, i) => [rows[i + 1]!, `  ${whyGivenUp(notes.get(m.messageId), ctx.c)}`]),
        ].join('\n'),
      );
      // At the limit, the queue's approximate depth says how many were left out.
      const depth = messages.length === opts.limit ? await queueDepth(ctx.target.sqs, dlqUrl) : null;
      const total = depth ? Math.max(messages.length, depth.visible + depth.inFlight) : messages.length;
      const count =
        total > messages.length
          ? `${messages.length} shown of about ${total} messages (raise --limit, now ${opts.limit})`
          : plural(messages.length, 'message');
      ctx.out(ctx.c.dim(`${count} in ${dlqUrl}; \`callbacks dlq redrive\` sends them back to the main queue.`));
      // A FIFO queue shows the first messages of each message group only, while a look holds them.
      if (depth === null) {
        const waiting = (await queueDepth(ctx.target.sqs, dlqUrl)).visible;
        const hidden = Math.min(waiting, opts.limit) - messages.length;
        if (hidden > 0)
          ctx.out(
            ctx.c.dim(
              `${plural(hidden, 'more message')} ${hidden === 1 ? 'waits' : 'wait'} behind them in their task's ` +
                `message group; a redrive moves them too.`,
            ),
          );
      }
    });
  });

  withCommonOptions(
    dlq
      .command('redrive')
      .description('send dead-lettered messages back to the main queue (each is sent, then deleted)')
      .option('--max <n>', 'move at most this many messages', positiveInt)
      .option('--yes', 'do not ask for confirmation')
      .option('--wait', 'then wait for the worker to take each copy, and say how each came out')
      .addOption(
        new Option('--timeout <duration>', 'with --wait: how long to wait for the worker (500ms, 10s, 2m)')
          .argParser(durationOption)
          .default(60_000, '60s'),
      ),
  ).action(async (opts: CommonOptions & RedriveOptions) => {
    await withTarget(opts, async (ctx) => {
      const from = await urlOf(ctx.target, 'dlq');
      const to = await urlOf(ctx.target, 'queue');
      const waiting = (await queueDepth(ctx.target.sqs, from)).visible;
      const expected = Math.min(waiting, opts.max ?? Infinity);
      if (!opts.yes) {
        if (!cliIo().stdin.isTTY)
          throw new CliError('dlq redrive moves messages: pass --yes to confirm when not at a terminal');
        if (
          !(await confirm(
            `Move ${opts.max ? `up to ${opts.max} of ` : ''}${plural(waiting, 'message')} from ${from} back to ` +
              `${to}? [y/N] `,
          ))
        ) {
          ctx.out('Nothing moved.');
          return;
        }
      }
      const bar =
        cliIo().stderr.isTTY && !opts.json
          ? new SingleBar({
              format: 'redrive [{bar}] {value}/{total} messages',
              hideCursor: true,
              stream: cliIo().stderr as NodeJS.WriteStream,
            })
          : null;
      bar?.start(Math.max(expected, 1), 0);
      let result: Awaited<ReturnType<typeof redriveDeadLetters>>;
      try {
        result = await redriveDeadLetters(ctx.target.sqs, {
          from,
          to,
          max: opts.max,
          onMoved: (moved) => {
            if (!bar) return;
            if (moved > bar.getTotal()) bar.setTotal(moved);
            bar.update(moved);
          },
        });
      } finally {
        bar?.stop();
      }
      const waited = opts.wait ? await waitForCopies(ctx, result.copies, opts.timeout) : null;
      if (opts.json) {
        printJson({ from, to, ...result, ...(waited ? { waited } : {}) });
      } else {
        ctx.out(`Moved ${plural(result.moved, 'message')} from ${from} to ${to}.`);
        if (waited) ctx.out(waitedLine(waited, opts.timeout, ctx.c));
        if (result.notDeleted.length) {
          ctx.out(
            ctx.c.yellow(
              `${plural(result.notDeleted.length, 'message')} went back to the queue but stayed in the dead-letter ` +
                `queue too (${result.notDeleted[0]!.error}); the worker applies each callback once, so a second ` +
                `redrive is harmless.`,
            ),
          );
        }
      }
      if (result.failed.length) {
        throw new CliError(
          `${plural(result.failed.length, 'message')} could not be sent to ${to} and stayed in the dead-letter ` +
            `queue: ${result.failed[0]!.error}`,
        );
      }
      if (waited && waited.failedAgain > 0) setExitCode(1);
    });
  });
}

interface RedriveOptions {
  max?: number;
  yes?: boolean;
  wait?: boolean;
  /** ms, parsed as the option is read. */
  timeout: number;
}

const tableOf = (ctx: Context) => new TableReader(ctx.target.dynamo, ctx.target.tableName);

/** A dead letter's last error as `--json` gives it: the worker's note of why it gave the message up. */
function lastErrorOf(note: MessageNote | undefined) {
  if (!note) return null;
  return { outcome: note.outcome, error: note.error, at: note.at, receiveCount: note.receiveCount };
}

/** Why the worker gave the message up, from its note; said plainly when there is none. */
function whyGivenUp(note: MessageNote | undefined, c: Colors): string {
  if (!note || note.error === null)
    return c.dim(
      'no note of why (dead-lettered before the worker kept notes, or the note could not be written): the ' +
        "worker's log has a callback_given_up line with this message id",
    );
  const at = note.receiveCount === null ? '' : ` at receive ${note.receiveCount}`;
  return styled`${c.dim(`given up${at}, ${isoTime(note.at)}:`)} ${c.red(note.error)}`;
}

export async function urlOf(target: Target, which: 'queue' | 'dlq'): Promise<string> {
  const { queueUrl, dlqUrl } = await target.queues();
  const url = which === 'queue' ? queueUrl : dlqUrl;
  if (!url) {
    throw new TargetError(
      `${target.describe} has no ${which === 'queue' ? 'main queue' : 'dead-letter queue'} URL: set ` +
        `${which === 'queue' ? 'QUEUE_URL' : 'DLQ_URL'} or use --stage`,
    );
  }
  return url;
}
