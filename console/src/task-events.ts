// The task's events in words, in time order: its start and end, its slices, each file's first failed
// upload, its recovery or its purge deadline, and its uploads (listed one by one for a few files, counted
// for many). It is also the text that the timeline draws.
import { h } from './dom.ts';
import { count, timeEl } from './format.ts';
import type { Mark } from './timeline-model.ts';

const LISTED_UPLOADS = 20;
const MAX_ITEMS = 500;

interface Item {
  at: number;
  kind: string;
  text: string;
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
  const firstTry: Mark[] = [];
  for (const [file, attempts] of uploads) {
    attempts.sort((a, b) => a.at - b.at);
    const firstFailure = attempts.find((a) => a.kind === 'upload_failed');
    if (!firstFailure) {
      firstTry.push(attempts[0]!);
      continue;
    }
    const failures = attempts.filter((a) => a.kind === 'upload_failed').length;
    items.push({ at: firstFailure.at, kind: 'upload_failed', text: `Upload of ${file} failed` });
    const success = attempts.find((a) => a.kind === 'upload_ok' && a.at >= firstFailure.at);
    if (success) {
      items.push({
        at: success.at,
        kind: 'upload_recovered',
        text: `${file} uploaded after ${count(failures)} failed attempt${failures === 1 ? '' : 's'}`,
      });
    } else if (failures > 1) {
      const last = attempts[attempts.length - 1]!;
      items.push({ at: last.at, kind: 'upload_failed', text: `Upload of ${file}: ${count(failures)} attempts failed` });
    }
  }
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
  for (const p of purges) {
    items.push({
      at: p.at,
      kind: 'purge',
      text: `Purge deadline of ${p.file}: the platform deletes it unless uploaded`,
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
