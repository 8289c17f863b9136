// The options that shape the tasks `callbacks send --lifecycle` and `callbacks emulate` generate, beyond the drawn
// ones: how long they run, how many images a screenshot task takes, and a storage outage at a given time into each.
// Big tasks, to try the console and the commands by hand (a 7-hour task of 100,000 images through an outage).
import type { Command } from 'commander';
import type { LifecycleOptions } from '../devkit/emulator/lifecycles.ts';
import { CliError } from './inspect.ts';
import { durationBetween, durationOption, wholeNumber } from './option-parsers.ts';

export interface TaskShapeOptions {
  /** ms, parsed as the option is read. */
  duration?: number;
  images?: number;
  outageAt?: number;
  outageFor?: number;
}

/** A storage outage lasts this long when `--outage-at` is given without `--outage-for`. */
const DEFAULT_OUTAGE_MS = 10 * 60_000;

export function withTaskShape(cmd: Command): Command {
  return cmd
    .option('--duration <duration>', 'each task runs this long, start to end (7h, 90m)', durationOption)
    .option(
      '--images <n>',
      'screenshot tasks: this many images (spread over --duration when given, else one every slicesSec)',
      wholeNumber(1),
    )
    .option(
      '--outage-at <duration>',
      "a storage outage this long after each task's start: its uploads fail every 10 s until it ends",
      durationBetween(0),
    )
    .option(
      '--outage-for <duration>',
      `how long that outage lasts (default ${DEFAULT_OUTAGE_MS / 60_000}m; --fail-uploads: past the 24-hour hold)`,
      durationBetween(1),
    );
}

/**
 * The generator's options for the shape asked; `outlasts`: the outage outlasts the platform's hold (the uploads in
 * it are given up). One sentence for options that do not go together.
 */
export function taskShapeOf(
  opts: TaskShapeOptions,
  outlasts: boolean,
): Pick<LifecycleOptions, 'durationMs' | 'images' | 'outageWindow'> {
  if (opts.outageFor !== undefined && opts.outageAt === undefined)
    throw new CliError('--outage-for goes with --outage-at (when the outage begins)');
  const shape: Pick<LifecycleOptions, 'durationMs' | 'images' | 'outageWindow'> = {};
  if (opts.duration !== undefined) shape.durationMs = opts.duration;
  if (opts.images !== undefined) shape.images = opts.images;
  if (opts.outageAt !== undefined)
    shape.outageWindow = {
      startMs: opts.outageAt,
      forMs: outlasts ? Number.POSITIVE_INFINITY : (opts.outageFor ?? DEFAULT_OUTAGE_MS),
    };
  return shape;
}
