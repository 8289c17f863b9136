// Small text helpers the logs, the quarantine details, the CLI and the in-memory maps share.

/**
 * The text cut to `max` characters, the cut marked with an ellipsis; with `showLength`, also how long the
 * whole was ("… (5000 characters)").
 */
export function clip(text: string, max: number, opts: { showLength?: boolean } = {}): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}…${opts.showLength ? ` (${text.length} characters)` : ''}`;
}

/**
 * An error as one short line: `Name: message` (the name left out when it says nothing more than Error),
 * first line only, at most `max` characters; never a stack trace. Duck-typed: SDK and fetch errors may come
 * from another realm, where `instanceof Error` is false.
 */
export function errorSentence(err: unknown, max = 300): string {
  const { name, message } = (err ?? {}) as { name?: unknown; message?: unknown };
  let text: string;
  if (typeof message === 'string') {
    const prefix = typeof name === 'string' && name !== '' && name !== 'Error' ? `${name}: ` : '';
    text = `${prefix}${message}`;
  } else {
    text = typeof err === 'string' ? err : 'unknown error';
  }
  return clip(text.split('\n')[0]!, max);
}

/**
 * One string for several parts, as a map key: the parts as a JSON array, so that no two lists of parts give
 * the same key whatever characters they hold (joining with a separator would let `a\0b`, `c` meet `a`, `b\0c`).
 */
export function compositeKey(...parts: readonly (string | number)[]): string {
  return JSON.stringify(parts);
}
