// DynamoDB's number type: 0, or a magnitude from 1e-130 to just below 1e126, with at most 38 significant
// digits. A number outside it is refused on every write (ValidationException), and JSON lets a callback carry
// one (`1e200`, `1e-200`, or a numeric string of 400 digits, Infinity once converted): checked here, before
// any write, so that such a callback is kept aside at once instead of retried until the dead-letter queue.
import type { Callback } from '../../../domain/callback.ts';

const dynamoNumberLimits = {
  /** Powers of ten of the first significant digit: from 1e-130 up to 9.99...e125. */
  minExponent: -130,
  maxExponent: 125,
  maxSignificantDigits: 38,
} as const;

/**
 * Why DynamoDB cannot store this number, to follow "is" in a sentence, or null. A string is read as the
 * number text sent to DynamoDB, exactly (what the SDK writes for a JS number is `String(n)`).
 */
export function numberProblem(value: number | string): string | null {
  // Most numbers are: a whole number JavaScript holds exactly has at most 16 digits, well within the limits.
  if (Number.isSafeInteger(value)) return null;
  const parts = /^[+-]?(\d*)(?:\.(\d*))?(?:e([+-]?\d+))?$/i.exec(String(value).trim());
  if (!parts || (parts[1] === '' && !parts[2])) return 'not a finite number';
  const digits = `${parts[1]}${parts[2] ?? ''}`;
  const lead = digits.search(/[1-9]/);
  if (lead === -1) return null;
  // The power of ten of the first significant digit: d.ddd x 10^exponent.
  const exponent = parts[1]!.length - 1 - lead + Number(parts[3] ?? 0);
  if (exponent < dynamoNumberLimits.minExponent) return `closer to 0 than 1e${dynamoNumberLimits.minExponent}`;
  if (exponent > dynamoNumberLimits.maxExponent) return `1e${dynamoNumberLimits.maxExponent + 1} or more in magnitude`;
  const significant = digits.slice(lead).replace(/0+$/, '').length;
  if (significant > dynamoNumberLimits.maxSignificantDigits)
    return `${significant} significant digits long, more than ${dynamoNumberLimits.maxSignificantDigits}`;
  return null;
}

/**
 * The first number DynamoDB cannot store in a value (numbers, arrays and objects at any depth), with the
 * dotted path that leads to it, or null. Iterative: a value may be nested deeper than the stack allows.
 */
export function findUnstorableNumber(value: unknown, path: string): { path: string; problem: string } | null {
  const stack: [unknown, string][] = [[value, path]];
  while (stack.length) {
    const [v, at] = stack.pop()!;
    if (typeof v === 'number') {
      const problem = numberProblem(v);
      if (problem) return { path: at, problem };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${at}[${i}]`]);
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) stack.push([entries[i]![1], `${at}.${entries[i]![0]}`]);
    }
  }
  return null;
}

/**
 * A sentence naming the first number of a parsed callback that DynamoDB cannot store, or null. Covers every
 * number the worker writes: the timestamp, code, mode, file size, upload code and the config (kept as
 * received, numeric strings turned into numbers).
 */
export function unstorableNumberIn(cb: Callback): string | null {
  // A screenshot upload's code comes from its output.fileState when it has one (docs/platform-callbacks.md §7).
  const output = cb.body.output as Record<string, unknown> | null | undefined;
  const uploadField = cb.service === 'screenshot' && output?.fileState != null ? 'output.fileState' : 'code';
  const fields: [string, unknown][] = [
    ['timestamp', cb.timestamp],
    [uploadField, cb.upload?.code],
    ['code', cb.code],
    ['mode', cb.mode],
    ['output.fileSize', cb.file?.size],
    ['config', cb.config],
  ];
  for (const [field, value] of fields) {
    const found = findUnstorableNumber(value, field);
    if (found)
      return (
        `${found.path} is ${found.problem}: DynamoDB stores 0 or a magnitude from 1e-130 to below 1e126, ` +
        'with at most 38 significant digits'
      );
  }
  return null;
}
