// The task's events in words, in time order: its start and end, its slices, its storage outages (the upload
// failures that came together, grouped in one window each: when it began and ended, how many files it held back,
// how many attempts failed, which recovered and which did not), its purge deadlines, the gaps in its callbacks, and
// its uploads (listed one by one for a few files, counted for many). It is also the text that the timeline draws:
// a big task's outage is one line, not one red line per file.
import { h } from './dom.ts';
import { count, duration, timeEl, utc } from './format.ts';
import type { Mark } from './timeline-model.ts';

const LISTED_UPLOADS = 20;
/** Purge deadlines listed one by one up to this many; beyond, counted. */
const LISTED_PURGES = 20;
const MAX_ITEMS = 500;
/** Upload failures this close in time belong to one outage window. */
const OUTAGE_JOIN_MS = 10 * 60_000;
/** A pause in the callbacks is said as a gap when it is this long, and ten times the task's usual interval. */
const GAP_MIN_MS = 10 * 60_000;

interface Item {
  at: number;
  kind: string;
  text: string;
}

const names = (files: readonly string[]) =>
  files.length <= 3 ? files.join(', ') : `${files.slice(0, 3).join(', ')} and ${count(files.length - 3)} more`;
const plural = (n: number, one: string, many = `${one}s`) => `${count(n)} ${n === 1 ? one : many}`;

/** The upload failures in windows of failures close in time: a storage outage each. */
function outageWindows(uploads: Map<string, Mark[]>): { from: number; to: number; files: string[] }[] {
  const failures = [...uploads.entries()]
    .flatMap(([file, attempts]) => attempts.filter((a) => a.kind === 'upload_failed').map((a) => ({ file, at: a.at })))
    .sort((a, b) => a.at - b.at);
  const windows: { from: number; to: number; files: Set<string> }[] = [];
  for (const f of failures) {
    const last = windows[windows.length - 1];
    if (last && f.at - last.to <= OUTAGE_JOIN_MS) {
      last.to = f.at;
      last.files.add(f.file);
    } else windows.push({ from: f.at, to: f.at, files: new Set([f.file]) });
  }
  return windows.map((w) => ({ from: w.from, to: w.to, files: [...w.files] }));
}

/** The outage windows in words: one line as each began, one as its files came through (or did not). */
function outageItems(uploads: Map<string, Mark[]>): Item[] {
  const items: Item[] = [];
  for (const w of outageWindows(uploads)) {
    const attempts = w.files.reduce(
      (n, file) =>
        n + uploads.get(file)!.filter((a) => a.kind === 'upload_failed' && a.at >= w.from && a.at <= w.to).length,
      0,
    );
    const recovered = new Map<string, number>();
    for (const file of w.files) {
      const success = uploads.get(file)!.find((a) => a.kind === 'upload_ok' && a.at >= w.from);
      if (success) recovered.set(file, success.at);
    }
    const failed = w.files.filter((f) => !recovered.has(f));
    const lasted = w.to > w.from ? ` to ${utc(w.to)} (${duration(w.to - w.from)})` : '';
    items.push({
      at: w.from,
      kind: 'outage',
      text:
        w.files.length === 1
          ? `Upload of ${w.files[0]} failed${lasted ? `, ${plural(attempts, 'attempt')} until ${utc(w.to)}` : ''}`
          : `Storage outage from ${utc(w.from)}${lasted}: ${plural(w.files.length, 'file')} failed, ` +
            `${plural(attempts, 'attempt')} in all (${names(w.files)})`,
    });
    if (recovered.size > 0) {
      const by = Math.max(...recovered.values());
      const still = failed.length ? `; ${count(failed.length)} still failed: ${names(failed)}` : '';
      items.push({
        at: by,
        kind: 'upload_recovered',
        text:
          w.files.length === 1
            ? `${w.files[0]} uploaded after ${plural(attempts, 'failed attempt')}`
            : `${count(recovered.size)} of the outage's ${plural(w.files.length, 'file')} uploaded after it, ` +
              `the last at ${utc(by)}${still}`,
      });
    }
  }
  return items;
}

/** Pauses in the callbacks much longer than the task's usual interval, said in words. */
function gapItems(marks: readonly Mark[]): Item[] {
  const times = marks.map((m) => m.at).sort((a, b) => a - b);
  if (times.length < 3) return [];
  const steps = times.slice(1).map((t, i) => t - times[i]!);
  const usual = [...steps].sort((a, b) => a - b)[Math.floor(steps.length / 2)]!;
  const threshold = Math.max(GAP_MIN_MS, 10 * usual);
  const items: Item[] = [];
  steps.forEach((step, i) => {
    if (step < threshold) return;
    items.push({
      at: times[i]!,
      kind: 'gap',
      text: `No callback for ${duration(step)}, from ${utc(times[i]!)} to ${utc(times[i + 1]!)}`,
    });
  });
  return items;
}

function eventItems(marks: readonly Mark[], purges: readonly { at: number; file: string }[]): Item[] {
  const items: Item[] = [];
  const uploads = new Map<string, Mark[]>();
  for (const m of marks) {
    switch (m.kind) {
      case 'start':
        items.push({ at: m.at, kind: m.kind, text: 'Started' });
        break;
      case 'start_failed':
        items.push({ at: m.at, kind: m.kind, text: 'The start failed' });
        break;
      case 'end':
        items.push({ at: m.at, kind: m.kind, text: 'Ended' });
        break;
      case 'end_failed':
        items.push({ at: m.at, kind: m.kind, text: 'Ended with a failure' });
        break;
      case 'slice':
        items.push({ at: m.at, kind: m.kind, text: `Slice: ${m.file ?? 'a file'} closed` });
        break;
      default: {
        const key = m.file ?? '';
        const list = uploads.get(key);
        if (list) list.push(m);
        else uploads.set(key, [m]);
      }
    }
  }
  for (const attempts of uploads.values()) attempts.sort((a, b) => a.at - b.at);
  items.push(...outageItems(uploads), ...gapItems(marks));
  const firstTry = [...uploads.values()].filter((a) => !a.some((m) => m.kind === 'upload_failed')).map((a) => a[0]!);
  if (firstTry.length <= LISTED_UPLOADS) {
    for (const m of firstTry) items.push({ at: m.at, kind: 'upload_ok', text: `${m.file ?? 'A file'} uploaded` });
  } else {
    const last = firstTry.reduce((a, b) => (b.at > a.at ? b : a));
    items.push({
      at: last.at,
      kind: 'upload_ok',
      text: `${count(firstTry.length)} files uploaded at their first attempt (the last one then)`,
    });
  }
  if (purges.length <= LISTED_PURGES) {
    for (const p of purges)
      items.push({
        at: p.at,
        kind: 'purge',
        text: `Purge deadline of ${p.file}: the platform deletes it unless uploaded`,
      });
  } else {
    const sorted = [...purges].sort((a, b) => a.at - b.at);
    items.push({
      at: sorted[0]!.at,
      kind: 'purge',
      text:
        `Purge deadlines of ${count(purges.length)} files, from ${utc(sorted[0]!.at)} to ${utc(sorted.at(-1)!.at)}: ` +
        'the platform deletes each unless uploaded',
    });
  }
  return items.sort((a, b) => a.at - b.at);
}

export function eventsList(
  marks: readonly Mark[],
  purges: readonly { at: number; file: string }[],
  complete: boolean,
): HTMLElement {
  const items = eventItems(marks, purges);
  const shown = items.slice(0, MAX_ITEMS);
  return h(
    'div',
    {},
    items.length === 0 ? h('p', {}, complete ? 'No event.' : 'Reading the callbacks…') : null,
    h(
      'ol',
      { class: 'events' },
      ...shown.map((item) => h('li', { class: `ev ev-${item.kind}` }, timeEl(item.at), ' ', item.text)),
    ),
    items.length > shown.length ? h('p', {}, `And ${count(items.length - shown.length)} more, in the timeline.`) : null,
    complete ? null : h('p', {}, 'More callbacks are being read.'),
  );
}
