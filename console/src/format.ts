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

/** A <time> element for an epoch-milliseconds value. */
export function timeEl(ms: number | null | undefined): HTMLElement {
  if (ms === null || ms === undefined) return h('span', {}, '—');
  return h('time', { datetime: new Date(ms).toISOString() }, utc(ms));
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

export function statusBadge(status: string): HTMLElement {
  const symbol = (STATUS_SYMBOLS as Record<string, string>)[status] ?? '?';
  return h(
    'span',
    { class: `status status-${/^[a-z_]+$/.test(status) ? status : 'unknown'}` },
    h('span', { 'aria-hidden': 'true' }, symbol),
    ` ${status.replace('_', ' ')}`,
  );
}

/**
 * A task still changes while it runs, while a file waits for its upload, and while a failed file is
 * retried (until its purge deadline).
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
