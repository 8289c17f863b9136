// What `callbacks dev --faults` takes: the kinds of fault (devkit/local/faults.ts provokes them) and the rate of
// each, read from `dynamo=0.05,crash=0.02,sns=0.1`. Apart, so that the CLI's option parsers read it without
// loading the local stack.

/**
 * dynamo: a DynamoDB call of any function fails (a write either before it reaches the table, or after: done,
 * but the caller sees an error); crash: a worker invocation dies (before its batch, or after it, its answer
 * lost); sns: a publish of task events is refused.
 */
export const FAULT_KINDS = ['dynamo', 'crash', 'sns'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
export type FaultRates = Partial<Record<FaultKind, number>>;

/** A `--faults` value that cannot be read; the message says why, in one sentence. */
export class FaultSpecError extends Error {
  override name = 'FaultSpecError';
}

/** `dynamo=0.05,crash=0.02,sns=0.1` (each kind at most once, a rate from 0 to 1) into its rates. */
export function parseFaults(text: string): FaultRates {
  const rates: FaultRates = {};
  const parts = text.split(',').map((p) => p.trim());
  if (parts.every((p) => p === ''))
    throw new FaultSpecError(
      `no fault given: use e.g. dynamo=0.05,crash=0.02,sns=0.1 (kinds: ${FAULT_KINDS.join(', ')})`,
    );
  for (const part of parts) {
    if (part === '') continue;
    const [kind, value, extra] = part.split('=').map((s) => s.trim());
    if (!FAULT_KINDS.includes(kind as FaultKind))
      throw new FaultSpecError(`unknown fault ${JSON.stringify(kind)}: the kinds are ${FAULT_KINDS.join(', ')}`);
    const rate = value !== undefined && /^(\d+(\.\d*)?|\.\d+)$/.test(value) ? Number(value) : Number.NaN;
    if (extra !== undefined || !(rate >= 0 && rate <= 1))
      throw new FaultSpecError(`${kind} needs a rate from 0 to 1, as in ${kind}=0.05 (not ${JSON.stringify(part)})`);
    if (rates[kind as FaultKind] !== undefined) throw new FaultSpecError(`${kind} is given twice`);
    rates[kind as FaultKind] = rate;
  }
  return rates;
}

/** The rates as the banner and the logs say them: `dynamo 5%, crash 2%`. */
export function describeFaults(rates: FaultRates): string {
  const given = FAULT_KINDS.filter((k) => (rates[k] ?? 0) > 0);
  return given.length === 0
    ? 'none'
    : given.map((k) => `${k} ${Number(((rates[k] ?? 0) * 100).toFixed(2))}%`).join(', ');
}
