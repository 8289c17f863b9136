// The task list: the filters of GET /tasks in a form (the facts of time among them: lost files, stalled tasks, a
// purge deadline within a while), the URL holding them (and the page's cursor), so that a view can be shared; tasks
// newest first, a page at a time, each linking to its task, its state in words and symbols, its times absolute and
// relative.
import { SERVICES } from '../../lib/platform/services.ts';
import { TASK_STATUSES } from '../../lib/domain/task.ts';
import { ApiError, listTasks, type TaskSummary } from './api.ts';
import { incidentsBanner } from './incidents.ts';
import { h } from './dom.ts';
import { count, statusBadge, timeEl } from './format.ts';

/** The query parameters of GET /tasks that the form sets, in its order. */
const FILTERS = [
  'room',
  'session',
  'status',
  'appKey',
  'service',
  'user',
  'since',
  'until',
  'lost',
  'stalled',
  'purgeBefore',
] as const;
type Filter = (typeof FILTERS)[number];
const LABELS: Record<Filter, string> = {
  room: 'Room',
  session: 'Session',
  status: 'Status',
  appKey: 'appKey',
  service: 'Service',
  user: 'User',
  since: 'Since',
  until: 'Until',
  lost: 'With lost files',
  stalled: 'Stalled',
  purgeBefore: 'Purge within',
};
const HINTS: Partial<Record<Filter, string>> = {
  since: '2h, 7d, 2025-11-22 or 2025-11-22T08:00:00Z',
  until: 'same forms as since',
  purgeBefore: 'a failed file deleted by then: 6h, 90m',
};
/** The filters that are on or off (`true` in the query when on). */
const CHECKS: readonly Filter[] = ['lost', 'stalled'];
const PAGE_SIZES = ['25', '50', '100', '200'];

function taskHref(t: Pick<TaskSummary, 'id' | 'appKey'>): string {
  return `/console/tasks/${encodeURIComponent(t.id)}?appKey=${encodeURIComponent(t.appKey)}`;
}

function filterForm(params: URLSearchParams, navigate: (url: string) => void): HTMLFormElement {
  const field = (name: Filter) => {
    const id = `filter-${name}`;
    const value = params.get(name) ?? '';
    let control: HTMLInputElement | HTMLSelectElement;
    if (CHECKS.includes(name)) {
      control = h('input', { id, name, type: 'checkbox', value: 'true', checked: value === 'true' });
    } else if (name === 'status' || name === 'service') {
      const values = name === 'status' ? TASK_STATUSES : SERVICES;
      control = h(
        'select',
        { id, name },
        h('option', { value: '' }, 'any'),
        ...values.map((v) => h('option', { value: v, selected: v === value }, v)),
      );
    } else {
      control = h('input', { id, name, type: 'text', value, autocomplete: 'off', spellcheck: 'false' });
      if (HINTS[name]) control.setAttribute('aria-describedby', `${id}-hint`);
    }
    return h(
      'div',
      { class: 'field' },
      h('label', { for: id }, LABELS[name]),
      control,
      HINTS[name] ? h('small', { id: `${id}-hint` }, HINTS[name]) : null,
    );
  };
  const limit = params.get('limit') ?? '50';
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter tasks', action: '/console/', method: 'get' },
    ...FILTERS.map(field),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'filter-limit' }, 'Per page'),
      h(
        'select',
        { id: 'filter-limit', name: 'limit' },
        // A size typed in the URL is kept, so that applying other filters does not change it.
        ...(PAGE_SIZES.includes(limit) ? PAGE_SIZES : [limit, ...PAGE_SIZES]).map((v) =>
          h('option', { value: v, selected: v === limit }, v),
        ),
      ),
    ),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit' }, 'Apply filters'),
      h('a', { href: '/console/', class: 'button-like' }, 'Clear'),
    ),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [k, v] of new FormData(form)) {
      if (typeof v === 'string' && v.trim() !== '' && !(k === 'limit' && v === '50')) next.set(k, v.trim());
    }
    const text = next.toString();
    navigate(`/console/${text ? `?${text}` : ''}`);
  });
  return form;
}

/** A task's files in words: how many, and of them pending, failed (not lost) and lost, each counted as such. */
function filesText(t: TaskSummary): Node[] {
  const failed = t.failedFiles - t.lostFiles;
  return [
    count(t.fileCount),
    t.pendingFiles ? `, ${count(t.pendingFiles)} pending` : '',
    failed ? `, ${count(failed)} failed` : '',
    t.lostFiles
      ? h('span', { class: 'lost' }, ', ', h('span', { 'aria-hidden': 'true' }, '⊘'), ` ${count(t.lostFiles)} lost`)
      : '',
  ].map((part) => (typeof part === 'string' ? document.createTextNode(part) : part));
}

function row(t: TaskSummary, now: number): HTMLTableRowElement {
  return h(
    'tr',
    { class: `row-${/^[a-z_]+$/.test(t.status) ? t.status : 'unknown'}` },
    // An id is read whole: it never wraps mid-word (the table scrolls instead).
    h('th', { scope: 'row' }, h('a', { href: taskHref(t), class: 'mono id' }, t.id)),
    h('td', {}, t.service),
    h('td', {}, statusBadge(t.status, t)),
    h('td', { class: 'mono' }, t.roomId ?? '—'),
    h('td', { class: 'mono' }, t.sessionId ?? '—'),
    h('td', { class: 'mono' }, t.userId ?? '—'),
    h('td', { class: 'mono' }, t.appKey),
    h('td', {}, timeEl(t.startedAt, now)),
    h('td', {}, timeEl(t.endedAt, now)),
    h('td', {}, ...filesText(t)),
    h('td', { class: 'num' }, count(t.eventCount)),
  );
}

export async function renderList(main: HTMLElement, url: URL, navigate: (url: string) => void): Promise<void> {
  const params = new URLSearchParams(url.search);
  document.title = 'Tasks · Callbacks console';
  const status = h('p', { class: 'status-line', role: 'status', 'aria-live': 'polite' }, 'Loading tasks…');
  const results = h('div', { class: 'results' });
  main.replaceChildren(h('h1', {}, 'Tasks'), filterForm(params, navigate), status, results);

  let page: Awaited<ReturnType<typeof listTasks>>;
  try {
    page = await listTasks(params);
  } catch (err) {
    status.textContent = 'The tasks could not be read.';
    const message = err instanceof ApiError ? `${err.message} (${err.code})` : `The tasks could not be read: ${err}`;
    results.replaceChildren(h('p', { class: 'error', role: 'alert' }, message));
    return;
  }
  const cursor = params.get('cursor');
  status.textContent =
    page.tasks.length === 0
      ? page.nextCursor
        ? 'No task on this page; the listing goes on: follow "Next page".'
        : 'No task matches these filters.'
      : `${count(page.tasks.length)} task${page.tasks.length === 1 ? '' : 's'} on this page, newest first.`;
  const headers = ['Task', 'Service', 'Status', 'Room', 'Session', 'User', 'appKey', 'Started', 'Ended', 'Files'];
  const table = h(
    'table',
    { class: 'tasks' },
    h('caption', { class: 'visually-hidden' }, 'Tasks, newest first'),
    h(
      'thead',
      {},
      h('tr', {}, ...headers.map((t) => h('th', { scope: 'col' }, t)), h('th', { scope: 'col' }, 'Callbacks')),
    ),
    h('tbody', {}, ...page.tasks.map((t) => row(t, Date.now()))),
  );
  const nav = h('nav', { class: 'pager', 'aria-label': 'Pages of tasks' });
  if (cursor) {
    const first = new URLSearchParams(params);
    first.delete('cursor');
    nav.append(h('a', { href: `/console/?${first}`, rel: 'first' }, '⇤ First page'));
  }
  if (page.nextCursor) {
    const next = new URLSearchParams(params);
    next.set('cursor', page.nextCursor);
    nav.append(h('a', { href: `/console/?${next}`, rel: 'next' }, 'Next page →'));
  }
  const incidents = incidentsBanner(page.incidents, Date.now());
  results.replaceChildren(
    ...(incidents ? [incidents] : []),
    ...(page.tasks.length > 0 ? [h('div', { class: 'scroll' }, table)] : []),
    nav,
  );
}
