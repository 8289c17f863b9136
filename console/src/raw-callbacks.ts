// A task's raw callbacks, a page at a time with the read API's cursors, each expanding to its JSON; when the table no
// longer holds the task's oldest ones, the sentence that says where they are (the archive) above them.
import { archivedSentence } from '../../lib/domain/archived-callbacks.ts';
import { errorText, type EventView, getEvents } from './api.ts';
import { h, rawText } from './dom.ts';
import { TYPE_NAMES, utc } from './format.ts';

const RAW_PAGE = 25;

export function rawCallbacks(
  id: string,
  appKey: string | undefined,
  signal: AbortSignal,
): { box: HTMLElement; changed(): void } {
  const box = h('div', { class: 'raw' });
  const notice = h('div', {});
  const cursors: Array<string | undefined> = [undefined];
  let current = 0;
  const show = async (index: number) => {
    current = index;
    notice.replaceChildren();
    box.replaceChildren(h('p', { role: 'status' }, 'Loading callbacks…'));
    let page: Awaited<ReturnType<typeof getEvents>>;
    try {
      page = await getEvents(id, { appKey, cursor: cursors[index], limit: RAW_PAGE }, signal);
    } catch (err) {
      if (!signal.aborted) box.replaceChildren(h('p', { class: 'error', role: 'alert' }, errorText(err)));
      return;
    }
    if (page.nextCursor) cursors[index + 1] = page.nextCursor;
    const list = h(
      'ol',
      { class: 'callbacks', start: index * RAW_PAGE + 1 },
      ...page.events.map((e: EventView) =>
        h(
          'li',
          {},
          h(
            'details',
            {},
            h(
              'summary',
              {},
              `${utc(e.timestamp)} · ${TYPE_NAMES[e.type] ?? `type ${e.type}`} · verdict ${e.verdict} · received ${utc(
                e.receivedAt,
              )}`,
            ),
            h('pre', {}, rawText(JSON.stringify(e, null, 2))),
          ),
        ),
      ),
    );
    const nav = h('nav', { class: 'pager', 'aria-label': 'Pages of raw callbacks' });
    if (index > 0) {
      const prev = h('button', { type: 'button' }, '← Previous callbacks');
      prev.addEventListener('click', () => show(index - 1).then(() => box.querySelector('button')?.focus()));
      nav.append(prev);
    }
    if (page.nextCursor) {
      const next = h('button', { type: 'button', 'data-next': 'true' }, 'Next callbacks →');
      next.addEventListener('click', () =>
        show(index + 1).then(() => (box.querySelector('[data-next]') as HTMLElement | null)?.focus()),
      );
      nav.append(next);
    }
    const archived = page.archived
      ? [h('p', { class: 'archived', role: 'note' }, archivedSentence(page.archived))]
      : [];
    box.replaceChildren(
      ...archived,
      h('p', {}, page.events.length === 0 ? 'No callback on this page.' : `Page ${index + 1}, in timestamp order.`),
      list,
      nav,
    );
  };
  void show(0);
  return {
    box: h('div', {}, notice, box),
    // The task changed: the page is read again, unless the reader has a callback open, who is offered it.
    changed() {
      if (!box.querySelector('details[open]')) {
        void show(current);
        return;
      }
      const again = h('button', { type: 'button' }, 'Read this page again');
      again.addEventListener('click', () => show(current).then(() => box.querySelector('summary')?.focus()));
      notice.replaceChildren(h('p', { role: 'status' }, 'New callbacks have come since this page was read. ', again));
    },
  };
}
