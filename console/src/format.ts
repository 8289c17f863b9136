// How the console writes times, durations, sizes and statuses. Times are the platform's (the callbacks'
// timestamps), written in UTC like the CLI's default, so two operators reading one view see the same text.
import type { TaskStatus } from '../../lib/domain/task.ts';
import { h } from './dom.ts';

export function utc(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return String(ms);
  return `${d
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, '')
    .replace(/Z$/, '')} UTC`;
}

/** How far `ms` is from `now`, as the CLI says it: `3 h ago`, `in 23 h`, `now`. */
export function relative(ms: number, now: number): string {
  const diff = ms - now;
  const abs = Math.abs(diff);
  if (abs < 1000) return 'now';
  let amount: string;
  if (abs < 90_000) amount = `${Math.round(abs / 1000)} s`;
  else if (abs < 90 * 60_000) amount = `${Math.round(abs / 60_000)} min`;
  else if (abs < 48 * 3_600_000) amount = `${Math.round(abs / 3_600_000)} h`;
  else amount = `${Math.round(abs / 86_400_000)} d`;
  return diff > 0 ? `in ${amount}` : `${amount} ago`;
}

/** A <time> element for an epoch-milliseconds value; with `now`, how long ago (or until) beside it. */
export function timeEl(ms: number | null | undefined, now?: number): HTMLElement {
  if (ms === null || ms === undefined) return h('span', {}, '—');
  const time = h('time', { datetime: new Date(ms).toISOString() }, utc(ms));
  if (now === undefined) return time;
  return h('span', { class: 'when' }, time, ' ', h('span', { class: 'ago' }, `(${relative(ms, now)})`));
}

export function duration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(abs)} ms`;
  const s = Math.floor(abs / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

export function bytes(n: number | null): string {
  if (n === null) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(1)} ${units[u]}`;
}

export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** Each status with a symbol, so colour is never the only signal. */
const STATUS_SYMBOLS: Record<TaskStatus, string> = {
  recording: '●',
  capturing: '●',
  ended: '◐',
  completed: '✓',
  upload_failed: '✗',
  failed: '✗',
};

/** The facts of time a task's status is read with (docs/contract.md §4): a stalled task is not live. */
export interface TaskFacts {
  stalledSince?: number | null;
  settledAt?: number | null;
}

/**
 * A task's status with a symbol and a word, so colour is never the only signal; a stalled task says so in place of
 * the live symbol of its status (no callback has come for longer than its stall time), a settled one beside it.
 */
export function statusBadge(status: string, facts: TaskFacts = {}): HTMLElement {
  const known = /^[a-z_]+$/.test(status) ? status : 'unknown';
  const words = status.replace('_', ' ');
  if (typeof facts.stalledSince === 'number') {
    return h(
      'span',
      { class: `status status-${known} is-stalled` },
      h('span', { 'aria-hidden': 'true' }, '⏸'),
      ` stalled · ${words}`,
    );
  }
  const symbol = (STATUS_SYMBOLS as Record<string, string>)[status] ?? '?';
  const settled = typeof facts.settledAt === 'number';
  return h(
    'span',
    { class: `status status-${known}${settled ? ' is-settled' : ''}` },
    h('span', { 'aria-hidden': 'true' }, symbol),
    ` ${words}`,
    settled ? h('span', { class: 'fact' }, ' · ', h('span', { 'aria-hidden': 'true' }, '◆'), ' settled') : null,
  );
}

/** Each state of a file's upload with a symbol of its own: a lost file is neither pending nor merely failed. */
export const UPLOAD_SYMBOLS: Readonly<Record<string, string>> = {
  uploaded: '✓',
  failed: '✗',
  lost: '⊘',
  pending: '…',
};

/**
 * A task still changes while it runs, while a file waits for its upload, and while a failed file is
 * retried (until its purge deadline). A stalled task waits for the platform: it is read again, and says so.
 */
export function isLive(
  status: string,
  files: readonly { upload: string; purgeAt: number | null }[],
  now: number,
): boolean {
  if (status === 'recording' || status === 'capturing' || status === 'ended') return true;
  return files.some((f) => f.upload === 'pending' || (f.upload === 'failed' && f.purgeAt !== null && f.purgeAt > now));
}

/** The callback types' names (docs/platform-callbacks.md §2). */
export const TYPE_NAMES: Readonly<Record<number, string>> = { 1: 'start', 2: 'slice', 3: 'end', 4: 'upload' };
