// Small text helpers the logs, the quarantine details, the CLI and the in-memory maps share.

/**
 * The text cut to `max` characters, the cut marked with an ellipsis; with `showLength`, also how long the
 * whole was ("… (5000 characters)").
 */
export function clip(text: string, max: number, opts: { showLength?: boolean } = {}): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}…${opts.showLength ? ` (${text.length} characters)` : ''}`;
}

/** How errorSentence words an error. */
export interface SentenceOptions {
  /** At most this many characters (default 300). */
  max?: number;
  /** The message alone, without the name: for errors already phrased for the reader (the CLI's). */
  bare?: boolean;
  /** Every line of the message, not the first only (a failed subprocess's output, for instance). */
  allLines?: boolean;
}

/**
 * An error as one short line: `Name: message` (the name left out when it says nothing more than Error),
 * first line only, at most `max` characters; never a stack trace. Duck-typed: SDK and fetch errors may come
 * from another realm, where `instanceof Error` is false. The one way the code turns an error into text.
 */
export function errorSentence(err: unknown, opts: SentenceOptions = {}): string {
  const { name, message } = (err ?? {}) as { name?: unknown; message?: unknown };
  let text: string;
  if (typeof message === 'string') {
    const named = !opts.bare && typeof name === 'string' && name !== '' && name !== 'Error';
    text = named ? `${name}: ${message}` : message;
  } else {
    // A thrown primitive says what it is; an object without a message says nothing readable.
    text =
      err !== null && ['string', 'number', 'boolean', 'bigint'].includes(typeof err) ? String(err) : 'unknown error';
  }
  return clip(opts.allLines ? text : text.split('\n')[0]!, opts.max ?? 300);
}

/**
 * One string for several parts, as a map key: the parts as a JSON array, so that no two lists of parts give
 * the same key whatever characters they hold (joining with a separator would let `a\0b`, `c` meet `a`, `b\0c`).
 */
export function compositeKey(...parts: readonly (string | number)[]): string {
  return JSON.stringify(parts);
}
