// The stage's durations of the facts of time (docs/contract.md §4, lib/domain/deadlines.ts), read by the worker
// (a new task's arm, a settle's move) and the sweeper from the same variables, so that both use one set.
import { defaultTimeSettings, type TimeSettings } from '../domain/deadlines.ts';
import { duration, positiveWholeNumber, type EnvVariable } from './read-env.ts';

const durationVariable = (ms: number): EnvVariable<number> => ({
  value: duration('a duration such as 10m, 2h or 1d'),
  default: ms,
  invalid: 'refuse',
});

/** The variables, each a duration (`10m`, `2h`) but STALL_FACTOR; a bad value stops the function. */
export const timeVariables = {
  SETTLE_AFTER: durationVariable(defaultTimeSettings.settleAfterMs),
  PURGE_WARNING_BEFORE: durationVariable(defaultTimeSettings.purgeWarningBeforeMs),
  STALL_FACTOR: {
    value: positiveWholeNumber('a whole number of intervals, at least 1'),
    default: defaultTimeSettings.stallFactor,
    invalid: 'refuse',
  } as EnvVariable<number>,
  STALL_MIN: durationVariable(defaultTimeSettings.stallMinMs),
  STALL_UNKNOWN: durationVariable(defaultTimeSettings.stallUnknownMs),
} as const;

/** The settings from what the variables read. */
export function timeSettingsOf(s: {
  SETTLE_AFTER: number;
  PURGE_WARNING_BEFORE: number;
  STALL_FACTOR: number;
  STALL_MIN: number;
  STALL_UNKNOWN: number;
}): TimeSettings {
  return {
    settleAfterMs: s.SETTLE_AFTER,
    purgeWarningBeforeMs: s.PURGE_WARNING_BEFORE,
    stallFactor: s.STALL_FACTOR,
    stallMinMs: s.STALL_MIN,
    stallUnknownMs: s.STALL_UNKNOWN,
  };
}
