// Numbers the platform sends as strings ("30", " 4 ", "4.0", "-1" occur in its own samples): one rule for
// the ingest's minimal check, the worker's schemas and the callback parse, so that nothing the ingest
// acknowledges is refused later for the way a number was written.

/** A decimal number in a string, spaces around allowed; no exponent, no sign but minus. */
export const numericString = /^\s*-?\d+(\.\d+)?\s*$/;

/** A whole number in a string (a screenshot upload's fileState read as a code). */
export const integerString = /^\s*-?\d+\s*$/;

/** A JSON number as it is, or the number a numeric string holds; undefined for anything else. */
export function numberLike(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && numericString.test(value)) return Number(value.trim());
  return undefined;
}
