// One task: its header, its timeline, its files, its events and its raw callbacks. The task's first page
// is drawn at once; the rest of its files and callbacks are read in the background, page after page, and
// the timeline is redrawn as they come (binned, so a task of 100,000 images stays fast). While the task is
// live the page reads it again every few seconds and redraws when it changed.
import { errorText, getEvents, getTask, type Task } from './api.ts';
import { externalLink, h, rawText } from './dom.ts';
import { rawCallbacks } from './raw-callbacks.ts';
import { bytes, count, duration, isLive, statusBadge, TYPE_NAMES, timeEl, utc } from './format.ts';
import { drawTimeline, kindText, legend } from './timeline.ts';
import { domainOf, type Mark, markOf } from './timeline-model.ts';
import { eventsList } from './task-events.ts';
import { incidentsBanner } from './incidents.ts';
import type { VerifiedFileView } from '../../lib/domain/verification.ts';

type FileView = Task['files'][number];

const REFRESH_MS = 5000;
const FILES_SHOWN_STEP = 200;

function section(id: string, title: string, ...children: Node[]): HTMLElement {
  return h('section', { 'aria-labelledby': `${id}-h` }, h('h2', { id: `${id}-h` }, title), ...children);
}

function header(task: Task, files: readonly FileView[], filesComplete: boolean): HTMLElement {
  const pending = files.filter((f) => f.upload === 'pending').length;
  const failed = files.filter((f) => f.upload === 'failed').length;
  const filesText = `${count(files.length)}${filesComplete ? '' : '+'} (${count(pending)} pending, ${count(
    failed,
  )} failed)`;
  const span = task.startedAt !== null && task.endedAt !== null ? ` (${duration(task.endedAt - task.startedAt)})` : '';
  const rows: Array<[string, Node | string]> = [
    ['Service', task.service],
    ['Task id', h('span', { class: 'mono' }, task.id)],
    ['appKey', h('span', { class: 'mono' }, task.appKey)],
    ['Room', h('span', { class: 'mono' }, task.roomId ?? '—')],
    ['Session', h('span', { class: 'mono' }, task.sessionId ?? '—')],
    ['User', h('span', { class: 'mono' }, task.userId ?? '—')],
  ];
  if (task.service === 'recording') {
    rows.push(['Mode', task.mode === null || task.mode === undefined ? '—' : `${task.modeName ?? '?'} (${task.mode})`]);
    rows.push(['Start file', h('span', { class: 'mono' }, task.startFileName ?? '—')]);
  }
  rows.push(
    ['Status', statusBadge(task.status)],
    ['Started', timeEl(task.startedAt)],
    ['Ended', h('span', {}, timeEl(task.endedAt), span)],
    ['Updated', timeEl(task.updatedAt)],
    ['Callbacks', count(task.eventCount)],
    ['Files', filesText],
    ['Extra', h('span', { class: 'mono' }, task.extra ?? '—')],
    [
      'Last error',
      task.lastError
        ? h(
            'span',
            { class: 'error-text' },
            `${TYPE_NAMES[task.lastError.type] ?? task.lastError.type} code ${task.lastError.code}: ${
              task.lastError.message ?? '(no message)'
            } at ${utc(task.lastError.at)}`,
          )
        : 'none',
    ],
  );
  const dl = h('dl', { class: 'header' });
  for (const [term, value] of rows) dl.append(h('dt', {}, term), h('dd', {}, value));
  const config = h(
    'details',
    { class: 'config' },
    h('summary', {}, 'Config'),
    h('pre', {}, rawText(JSON.stringify(task.config, null, 2) ?? 'null')),
  );
  return h('div', {}, dl, config);
}

function purgeText(purgeAt: number | null, now: number): string {
  if (purgeAt === null) return '—';
  const left = purgeAt - now;
  return left > 0 ? `in ${duration(left)} (${utc(purgeAt)})` : `passed ${duration(-left)} ago (${utc(purgeAt)})`;
}

function outcomeCell(f: FileView): HTMLElement {
  const symbol = f.upload === 'uploaded' ? '✓' : f.upload === 'failed' ? '✗' : '…';
  const detail = f.code !== null ? ` (code ${f.code}${f.message ? `: ${f.message}` : ''})` : '';
  return h(
    'td',
    { class: `outcome outcome-${f.upload}` },
    h('span', { 'aria-hidden': 'true' }, symbol),
    ` ${f.upload}${detail}`,
  );
}

/** What the check of an uploaded file in its storage found (docs/verification.md); the reason on hover. */
function storageCell(f: FileView): HTMLElement {
  const v = (f as Partial<VerifiedFileView>).verification ?? null;
  if (!v) return h('td', {}, '—');
  const kind =
    v.state === 'verified' ? 'uploaded' : v.state === 'pending' || v.state === 'unverifiable' ? 'pending' : 'failed';
  const text = v.state.replace('_', ' ');
  return h('td', { class: `outcome outcome-${kind}`, ...(v.reason ? { title: v.reason } : {}) }, text);
}

function filesTable(files: readonly FileView[], shown: number, now: number): HTMLElement {
  const rows = files
    .slice(0, shown)
    .map((f) =>
      h(
        'tr',
        {},
        h('th', { scope: 'row', class: 'mono' }, f.fileName),
        h('td', { class: 'num' }, bytes(f.size)),
        h('td', {}, f.url ? externalLink(f.url) : '—'),
        h('td', { class: 'num' }, count(f.attempts)),
        outcomeCell(f),
        h('td', {}, purgeText(f.purgeAt, now)),
        storageCell(f),
      ),
    );
  const headers = ['File', 'Size', 'URL', 'Attempts', 'Outcome', 'Purge', 'In storage'];
  return h(
    'div',
    { class: 'scroll' },
    h(
      'table',
      { class: 'files' },
      h('caption', { class: 'visually-hidden' }, 'Files of the task, in file-name order'),
      h('thead', {}, h('tr', {}, ...headers.map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, ...rows),
    ),
  );
}

export async function renderTask(main: HTMLElement, url: URL, signal: AbortSignal): Promise<void> {
  let id: string;
  try {
    id = decodeURIComponent(url.pathname.slice('/console/tasks/'.length));
  } catch {
    main.replaceChildren(
      h('p', {}, h('a', { href: '/console/' }, '← All tasks')),
      h('p', { class: 'error', role: 'alert' }, 'This address names no task: its id is not percent-encoded UTF-8.'),
    );
    return;
  }
  const appKey = url.searchParams.get('appKey') ?? undefined;
  const status = h('p', { class: 'status-line', role: 'status', 'aria-live': 'polite' }, 'Loading the task…');
  const title = h('h1', {}, 'Task ', h('span', { class: 'mono' }, id));
  main.replaceChildren(h('p', {}, h('a', { href: '/console/' }, '← All tasks')), title, status);
  document.title = `Task ${id} · Callbacks console`;

  let first: Awaited<ReturnType<typeof getTask>>;
  try {
    first = await getTask(id, { appKey, filesLimit: 1000 }, signal);
  } catch (err) {
    if (!signal.aborted) main.append(h('p', { class: 'error', role: 'alert' }, errorText(err)));
    return;
  }
  let task = first.task;
  let files: FileView[] = [...task.files];
  let filesComplete = first.nextFilesCursor === null;
  let marks: Mark[] = [];
  let callbacksRead = 0;
  let callbacksComplete = false;
  let filesShown = FILES_SHOWN_STEP;

  const headerBox = h('div', {});
  const timelineBox = h('div', { class: 'timeline-box' });
  const axisBox = h('div', {});
  const timelineStatus = h('p', { class: 'status-line', role: 'status', 'aria-live': 'polite' });
  const filesBox = h('div', {});
  const eventsBox = h('div', {});
  const raw = rawCallbacks(id, task.appKey, signal);
  const incidents = incidentsBanner(first.incidents, Date.now());
  main.replaceChildren(
    main.firstElementChild!,
    title,
    status,
    ...(incidents ? [incidents] : []),
    section('summary', 'Summary', headerBox),
    section('timeline', 'Timeline', timelineStatus, axisBox, timelineBox, legend(task.service)),
    section('files', 'Files', filesBox),
    section('events', 'Events', eventsBox),
    section('raw', 'Raw callbacks', raw.box),
  );
  title.replaceChildren(
    `${task.service === 'recording' ? 'Recording' : 'Screenshot task'} `,
    h('span', { class: 'mono' }, task.id),
  );

  const live = () => isLive(task.status, files, Date.now());

  const drawFiles = () => {
    const now = Date.now();
    const more = files.length > filesShown;
    const button = h(
      'button',
      { type: 'button' },
      `Show ${count(Math.min(FILES_SHOWN_STEP, files.length - filesShown))} more files`,
    );
    button.addEventListener('click', () => {
      filesShown += FILES_SHOWN_STEP;
      drawFiles();
      button.focus();
    });
    filesBox.replaceChildren(
      files.length === 0 ? h('p', {}, 'No file yet.') : filesTable(files, filesShown, now),
      h(
        'p',
        {},
        `${count(Math.min(filesShown, files.length))} of ${count(files.length)}${
          filesComplete ? '' : '+'
        } files shown.`,
      ),
      ...(more ? [button] : []),
    );
  };

  // The axis spans the whole story by default (purge deadlines a day later, now); narrowed to the
  // callbacks, the task's own minutes fill the width.
  let wholeStory = true;
  const axisChoice = h('fieldset', { class: 'axis-choice' }, h('legend', {}, 'Time axis'));
  for (const [value, text] of [
    ['whole', 'callbacks, purge deadlines and now'],
    ['callbacks', 'callbacks only'],
  ] as const) {
    const input = h('input', { type: 'radio', name: 'axis', value, id: `axis-${value}`, checked: value === 'whole' });
    input.addEventListener('change', () => {
      wholeStory = value === 'whole';
      drawTimelineNow();
    });
    axisChoice.append(h('label', { for: `axis-${value}` }, input, ` ${text}`));
  }
  axisBox.append(axisChoice);

  const drawTimelineNow = () => {
    const now = Date.now();
    const allPurges = files.filter((f) => f.purgeAt !== null).map((f) => ({ at: f.purgeAt!, file: f.fileName }));
    const times = [
      ...(task.startedAt !== null ? [task.startedAt] : []),
      ...(task.endedAt !== null ? [task.endedAt] : []),
      ...(task.updatedAt !== null ? [task.updatedAt] : []),
      ...(wholeStory ? allPurges.map((p) => p.at) : []),
    ];
    let lo = Number.POSITIVE_INFINITY;
    let hi = Number.NEGATIVE_INFINITY;
    for (const m of marks) {
      if (m.at < lo) lo = m.at;
      if (m.at > hi) hi = m.at;
    }
    if (marks.length > 0) times.push(lo, hi);
    const domain = domainOf(times, wholeStory && live() ? now : null);
    const purges = allPurges.filter((p) => p.at >= domain.from && p.at <= domain.to);
    const beyond = allPurges.length - purges.length;
    const width = Math.max(300, Math.min(1600, (main.clientWidth || 1000) - 160));
    timelineBox.replaceChildren(drawTimeline({ service: task.service, marks, purges, domain, now, width }));
    const uploads = marks.filter((m) => m.kind === 'upload_ok' || m.kind === 'upload_failed').length;
    const failedUploads = marks.filter((m) => m.kind === 'upload_failed').length;
    // Busy while the pages come, so that a screen reader announces the count once, not at every page.
    timelineStatus.setAttribute('aria-busy', String(!callbacksComplete));
    timelineStatus.textContent =
      `${callbacksComplete ? 'All' : 'Reading…'} ${count(callbacksRead)} of ${count(task.eventCount)} callbacks: ` +
      `${kindText('upload_ok', uploads - failedUploads)}, ${kindText('upload_failed', failedUploads)}, ` +
      `${kindText('purge', allPurges.length)}${beyond > 0 ? ` (${count(beyond)} beyond the axis)` : ''}` +
      `${now > domain.to ? `; now is ${duration(now - domain.to)} later` : ''}.`;
    eventsBox.replaceChildren(eventsList(marks, allPurges, callbacksComplete));
  };

  const drawAll = () => {
    headerBox.replaceChildren(header(task, files, filesComplete));
    drawFiles();
    drawTimelineNow();
    status.textContent = live() ? `Live: read again every ${REFRESH_MS / 1000} s.` : '';
  };

  // Reads every page of files and of callbacks, redrawing now and then as they come.
  const readRest = async (filesCursor: string | null) => {
    let lastDraw = 0;
    const drawSoon = () => {
      if (Date.now() - lastDraw > 400) {
        lastDraw = Date.now();
        drawAll();
      }
    };
    while (filesCursor && !signal.aborted) {
      const page = await getTask(id, { appKey: task.appKey, filesCursor, filesLimit: 1000 }, signal);
      files = files.concat(page.task.files);
      filesCursor = page.nextFilesCursor;
      filesComplete = filesCursor === null;
      drawSoon();
    }
    let cursor: string | undefined;
    const read: Mark[] = [];
    let n = 0;
    do {
      const page = await getEvents(id, { appKey: task.appKey, cursor, limit: 500 }, signal);
      for (const e of page.events) {
        const m = markOf(e);
        if (m) read.push(m);
      }
      n += page.events.length;
      cursor = page.nextCursor ?? undefined;
      if (marks.length <= read.length) {
        marks = read;
        callbacksRead = n;
      }
      callbacksComplete = cursor === undefined;
      if (callbacksComplete) {
        marks = read;
        callbacksRead = n;
      }
      drawSoon();
    } while (cursor && !signal.aborted);
    drawAll();
  };

  drawAll();
  try {
    await readRest(first.nextFilesCursor);
  } catch (err) {
    if (!signal.aborted) timelineStatus.append(h('span', { class: 'error', role: 'alert' }, ` ${errorText(err)}`));
  }

  // While live: read the task again; when it changed, read it all again.
  while (!signal.aborted && live()) {
    await new Promise((r) => setTimeout(r, REFRESH_MS));
    if (signal.aborted) return;
    if (document.hidden) continue;
    try {
      const again = await getTask(id, { appKey: task.appKey, filesLimit: 1000 }, signal);
      if (again.task.updatedAt === task.updatedAt && again.task.eventCount === task.eventCount) {
        drawAll();
        continue;
      }
      task = again.task;
      files = [...task.files];
      filesComplete = again.nextFilesCursor === null;
      callbacksComplete = false;
      raw.changed();
      await readRest(again.nextFilesCursor);
    } catch (err) {
      if (!signal.aborted) status.textContent = errorText(err);
    }
  }
}
