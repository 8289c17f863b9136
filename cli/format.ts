// Human output of the inspection commands: sizes, times, durations, colours and tables. Pure functions,
// except `colorsFor`, which reads whether stdout is a terminal.
//
// Every value shown to a person goes through `printable` (a table's cells and a field's values do by
// themselves; so does the text given to a colour of `colors`): ids, rooms and messages come from callbacks
// anyone can send, and a control character or a bidi override printed as it is would drive the terminal
// (clear the screen, set the window title, write the clipboard with OSC 52) or show text other than stored.
import Table from 'cli-table3';
import { createColors } from 'picocolors';
import { checkTimeZone, parseDuration, parseTimePoint as parseTimePointIn, zoneOffsetMs } from '../lib/time-point.ts';
import { cliIo } from './io.ts';

export type Colors = ReturnType<typeof createColors>;

/**
 * What is never printed as it is: C0 and C1 controls, DEL, the format characters (bidi embeddings, overrides
 * and isolates, zero-width characters, invisible tags) and the line and paragraph separators.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;
const HIDDEN_BUT_LINE_BREAKS = /(?!\n)[\p{Cc}\p{Cf}\u2028\u2029]/gu;
const SHORT_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeHidden(ch: string): string {
  const short = SHORT_ESCAPES[ch];
  if (short) return short;
  const code = ch.codePointAt(0)!;
  if (code <= 0xff) return `\\x${code.toString(16).padStart(2, '0')}`;
  if (code <= 0xffff) return `\\u${code.toString(16).padStart(4, '0')}`;
  return `\\u{${code.toString(16)}}`;
}

/**
 * `text` safe to print on a terminal: each control or invisible format character written as an escape
 * (`\x1b`, `\u202e`, `\n`). `lines` keeps line breaks (a raw body shown as its lines); nothing else is kept.
 */
export function printable(text: string, opts: { lines?: boolean } = {}): string {
  return text.replace(opts.lines ? HIDDEN_BUT_LINE_BREAKS : HIDDEN, escapeHidden);
}

/**
 * `value` as JSON text, exact (it parses back to the same value) and safe on a terminal: what JSON.stringify
 * leaves as it is of the characters `printable` escapes (DEL, C1 controls, format characters, the separators)
 * is written as a `\uXXXX` escape too. They can only stand inside JSON strings, where the escape means the same.
 */
export function jsonText(value: unknown, indent?: number): string {
  return safeJson(JSON.stringify(value, null, indent) ?? 'null');
}

/** JSON text as `jsonText` writes it: the same text, with the characters `printable` escapes written as escapes. */
export function safeJson(json: string): string {
  // One \u escape per UTF-16 unit: a character beyond the BMP (a tag) is written as its surrogate pair. The
  // line breaks left are the indentation's: JSON.stringify escapes those inside strings.
  const units = (ch: string) =>
    ch
      .split('')
      .map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`)
      .join('');
  return json.replace(HIDDEN_BUT_LINE_BREAKS, units);
}

const SIZE_UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** Bytes in binary units: `512 B`, `1.5 KiB`, `700 MiB`, `1.2 GiB`; `-` when unknown. */
export function humanSize(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '-';
  if (Math.abs(bytes) < 1024) return `${bytes} B`;
  let value = bytes;
  let unit = 'B';
  for (const u of SIZE_UNITS) {
    if (Math.abs(value) < 1024) break;
    value /= 1024;
    unit = u;
  }
  // One decimal, without a trailing ".0": 1.2 GiB, 700 MiB. Rounding can reach 1024: move up a unit.
  let shown = Number(value.toFixed(1));
  if (Math.abs(shown) >= 1024 && unit !== SIZE_UNITS[SIZE_UNITS.length - 1]) {
    shown = Number((value / 1024).toFixed(1));
    unit = SIZE_UNITS[SIZE_UNITS.indexOf(unit) + 1]!;
  }
  return `${shown} ${unit}`;
}

/** The IANA time zone, per run, every time is printed in and every zone-less time typed is read in (`--tz`). */
const zones = new WeakMap<object, string>();
const displayZone = (): string => zones.get(cliIo()) ?? 'UTC';

/** Sets the zone of printed and typed times; throws a one-sentence error for an unknown zone. */
export function setTimeZone(zone: string | undefined): void {
  const next = zone?.trim() || 'UTC';
  checkTimeZone(next);
  zones.set(cliIo(), next);
}

/**
 * ISO 8601 in the display zone (UTC unless `--tz`), without milliseconds when they are zero:
 * `2025-11-22T08:00:00Z`, or `2025-11-22T16:00:00+08:00` with `--tz Asia/Shanghai`.
 */
export function isoTime(ms: number | null | undefined, zone: string = displayZone()): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  if (zone === 'UTC') return new Date(ms).toISOString().replace('.000Z', 'Z');
  const offset = zoneOffsetMs(ms, zone);
  const wall = new Date(ms + offset).toISOString().replace('.000Z', 'Z').slice(0, -1);
  const sign = offset < 0 ? '-' : '+';
  const minutes = Math.abs(Math.round(offset / 60_000));
  const hh = String(Math.floor(minutes / 60)).padStart(2, '0');
  const mm = String(minutes % 60).padStart(2, '0');
  return `${wall}${sign}${hh}:${mm}`;
}

/** The time of day in the display zone, to the millisecond: `08:00:00.123`. */
export function clockTime(ms: number, zone: string = displayZone()): string {
  const offset = zoneOffsetMs(ms, zone);
  return new Date(ms + offset).toISOString().slice(11, 23);
}

/** How far `ms` is from `now`: `in 23 h`, `3 h ago`, `in 5 min`, `2 d ago`, `now`. */
export function relativeTime(ms: number, now: number): string {
  const diff = ms - now;
  const abs = Math.abs(diff);
  let amount: string;
  if (abs < 1000) return 'now';
  if (abs < 90_000) amount = `${Math.round(abs / 1000)} s`;
  else if (abs < 90 * 60_000) amount = `${Math.round(abs / 60_000)} min`;
  else if (abs < 48 * 3_600_000) amount = `${Math.round(abs / 3_600_000)} h`;
  else amount = `${Math.round(abs / 86_400_000)} d`;
  return diff > 0 ? `in ${amount}` : `${amount} ago`;
}

/** `2025-11-22T08:00:00Z (3 h ago)`, or `-`. */
export function timeWithRelative(ms: number | null | undefined, now: number): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  return `${isoTime(ms)} (${relativeTime(ms, now)})`;
}

export { parseDuration };

/** A point in time typed on the command line; a time without a zone is read in the display zone (`--tz`). */
export function parseTimePoint(text: string, now: number, zone: string = displayZone()): number {
  return parseTimePointIn(text, now, zone);
}

/** Colours only on a terminal, and never with `--no-color` or `NO_COLOR` set. */
export function colorsEnabled(
  opts: { color?: boolean },
  stream: { isTTY?: boolean } = cliIo().stdout,
  env: Readonly<Record<string, string | undefined>> = cliIo().env,
): boolean {
  if (opts.color === false) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return stream.isTTY === true;
}

/**
 * What the colours of `colors` and `styled` returned: printable already, kept as they are by `table`, `fields`
 * and the colours. A text is looked up soon after it is made (a table is printed as its rows are built), so
 * two generations of distinct texts are kept, not every one a long `callbacks dev` ever printed.
 */
const STYLED_GENERATION = 10_000;
let styledTexts = new Set<string>();
let styledBefore = new Set<string>();

function rememberStyled(text: string): void {
  if (styledTexts.size >= STYLED_GENERATION) {
    styledBefore = styledTexts;
    styledTexts = new Set();
  }
  styledTexts.add(text);
}

function isStyled(text: string | number): boolean {
  return typeof text === 'number' || styledTexts.has(text) || styledBefore.has(text);
}

/** A cell or value as printed: kept when it is a number or the output of a colour, made printable otherwise. */
function cellText(text: string | number): string {
  return isStyled(text) ? String(text) : printable(text as string);
}

/**
 * The colours, on or off; each makes its text printable before styling it (a colour's own output, nested in
 * another, is kept).
 */
export function colors(enabled: boolean): Colors {
  const base = createColors(enabled);
  const safe = { ...base };
  for (const key of Object.keys(base) as (keyof Colors)[]) {
    const style = base[key];
    if (typeof style !== 'function') continue;
    (safe as Record<string, unknown>)[key] = (input: unknown) => {
      const text = typeof input === 'string' || typeof input === 'number' ? input : String(input);
      const out = style(cellText(text));
      rememberStyled(out);
      return out;
    };
  }
  return safe;
}

/**
 * A text made of coloured parts and values, kept as it is by `table` and `fields`: the literal parts are the
 * code's own; each value is made printable unless a colour made it (`` styled`${c.red('failed')} ${code}` ``).
 */
export function styled(literals: TemplateStringsArray, ...values: (string | number)[]): string {
  const out = literals.reduce((text, literal, i) => text + cellText(values[i - 1]!) + literal);
  rememberStyled(out);
  return out;
}

export function colorsFor(opts: { color?: boolean }): Colors {
  return colors(colorsEnabled(opts));
}

/**
 * A borderless table (easy to read, grep and cut), with the header in bold when colours are on. Each cell is
 * made printable unless a colour of `colors` made it.
 */
export function table(head: string[], rows: (string | number)[][], c: Colors): string {
  const t = new Table({
    head: head.map((h) => c.bold(h)),
    chars: {
      top: '',
      'top-mid': '',
      'top-left': '',
      'top-right': '',
      bottom: '',
      'bottom-mid': '',
      'bottom-left': '',
      'bottom-right': '',
      left: '',
      'left-mid': '',
      mid: '',
      'mid-mid': '',
      right: '',
      'right-mid': '',
      middle: '  ',
    },
    // cli-table3 colours headers and borders by default; colours here are ours alone.
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
  });
  t.push(...rows.map((row) => row.map(cellText)));
  // Lines of a borderless table end in padding: trim it so output is stable to compare and paste.
  return t
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}

/** Label/value lines aligned on the labels; each value made printable unless a colour of `colors` made it. */
export function fields(pairs: [string, string][], c: Colors): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `  ${c.dim(k.padEnd(width))}  ${cellText(v)}`).join('\n');
}

const CALLBACK_TYPE_NAMES: Record<number, string> = { 1: 'start', 2: 'slice', 3: 'end', 4: 'upload' };

/** `4 upload` */
export function callbackTypeName(type: number): string {
  return CALLBACK_TYPE_NAMES[type] ? `${type} ${CALLBACK_TYPE_NAMES[type]}` : String(type);
}

/** Status words coloured by what they ask of the reader. */
export function colorStatus(status: string, c: Colors): string {
  switch (status) {
    case 'completed':
    case 'uploaded':
    case 'valid':
      return c.green(status);
    case 'upload_failed':
    case 'failed':
    case 'invalid':
      return c.red(status);
    case 'pending':
    case 'recording':
    case 'capturing':
    case 'ended':
      return c.cyan(status);
    default:
      return c.yellow(status);
  }
}

/** "1 task", "3 tasks" */
export function plural(n: number, word: string, pluralWord = `${word}s`): string {
  return `${n} ${n === 1 ? word : pluralWord}`;
}
