// One task: its header, its timeline, its files, its events and its raw callbacks. The task's first page
// is drawn at once; the rest of its files and callbacks are read in the background, page after page, and
// the timeline is redrawn as they come (binned, so a task of 100,000 images stays fast). While the task is
// live the page reads it again every few seconds and redraws when it changed; a stalled task is read again too, and
// the page says that it waits for the platform. Failed and lost files come first, so that a big task's failures are
// not buried under its thousands of uploads.
import { errorText, getEvents, getTask, type Task } from './api.ts';
import { externalLink, h, rawText } from './dom.ts';
import { rawCallbacks } from './raw-callbacks.ts';
import {
  bytes,
  count,
  duration,
  isLive,
  relative,
  statusBadge,
  TYPE_NAMES,
  timeEl,
  UPLOAD_SYMBOLS,
  utc,
} from './format.ts';
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

/** The last error of the task: a completed task recovered from it, which is said instead of shown as an error. */
function lastErrorText(task: Task): Node | string {
  const e = task.lastError;
  if (!e) return 'none';
  const text = `${TYPE_NAMES[e.type] ?? e.type} code ${e.code}: ${e.message ?? '(no message)'} at ${utc(e.at)}`;
  if (task.status === 'completed')
    return h('span', { class: 'recovered' }, h('span', { 'aria-hidden': 'true' }, '↺'), ` recovered from: ${text}`);
  return h('span', { class: 'error-text' }, text);
}

function header(task: Task, now: number): HTMLElement {
  // The task's own counts: whole from the first page on, whatever pages of files have come yet.
  const c = task.counts;
  // `failed` counts the lost files too: each is said once.
  const failed = c.failed - c.lost;
  const filesText = `${count(c.total)} (${count(c.pending)} pending, ${count(failed)} failed, ${count(c.lost)} lost)`;
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
  rows.push(['Status', statusBadge(task.status, task)]);
  if (typeof task.stalledSince === 'number')
    rows.push([
      'Stalled since',
      h('span', {}, timeEl(task.stalledSince, now), ": no callback since; it waits for the platform's next one"),
    ]);
  if (typeof task.settledAt === 'number') rows.push(['Settled at', timeEl(task.settledAt, now)]);
  rows.push(
    ['Started', timeEl(task.startedAt, now)],
    ['Ended', h('span', {}, timeEl(task.endedAt, now), span)],
    ['Updated', timeEl(task.updatedAt, now)],
    ['Callbacks', count(task.eventCount)],
    ['Files', filesText],
    ['Extra', h('span', { class: 'mono' }, task.extra ?? '—')],
    ['Last error', lastErrorText(task)],
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
  const symbol = UPLOAD_SYMBOLS[f.upload] ?? '?';
  const detail = f.code !== null ? ` (code ${f.code}${f.message ? `: ${f.message}` : ''})` : '';
  return h(
    'td',
    { class: `outcome outcome-${f.upload}` },
    h('span', { 'aria-hidden': 'true' }, symbol),
    ` ${f.upload}${detail}`,
  );
}

/** The order files are listed in: lost, then failed, then pending, then uploaded (each in file-name order). */
const FILE_ORDER: Readonly<Record<string, number>> = { lost: 0, failed: 1, pending: 2, uploaded: 3 };

/** Failed and lost files first: a big task's failures on top, not under thousands of uploads. */
function failuresFirst(files: readonly FileView[]): FileView[] {
  return files
    .map((f, i) => ({ f, i }))
    .sort((a, b) => (FILE_ORDER[a.f.upload] ?? 4) - (FILE_ORDER[b.f.upload] ?? 4) || a.i - b.i)
    .map(({ f }) => f);
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
      h('caption', { class: 'visually-hidden' }, 'Files of the task: lost and failed first, then in file-name order'),
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

  // Failed and lost files first; or those alone.
  let failedOnly = false;
  const failedOnlyBox = h('input', { type: 'checkbox', id: 'files-failed-only' });
  failedOnlyBox.addEventListener('change', () => {
    failedOnly = failedOnlyBox.checked;
    drawFiles();
  });
  const filesChoice = h(
    'p',
    { class: 'files-choice' },
    h('label', { for: 'files-failed-only' }, failedOnlyBox, ' Failed and lost files only'),
  );
  const drawFiles = () => {
    const now = Date.now();
    const listed = failuresFirst(files).filter((f) => !failedOnly || f.upload === 'failed' || f.upload === 'lost');
    const more = listed.length > filesShown;
    const button = h(
      'button',
      { type: 'button' },
      `Show ${count(Math.min(FILES_SHOWN_STEP, listed.length - filesShown))} more files`,
    );
    button.addEventListener('click', () => {
      filesShown += FILES_SHOWN_STEP;
      drawFiles();
      button.focus();
    });
    const which = failedOnly ? 'failed or lost files' : 'files';
    filesBox.replaceChildren(
      filesChoice,
      listed.length === 0
        ? h('p', {}, files.length === 0 ? 'No file yet.' : 'No file failed.')
        : filesTable(listed, filesShown, now),
      h(
        'p',
        {},
        `${count(Math.min(filesShown, listed.length))} of ${count(listed.length)}${
          filesComplete ? '' : '+'
        } ${which} shown, lost and failed first.`,
      ),
      ...(more ? [button] : []),
    );
  };

  // The axis spans the callbacks by default, so that the task's own minutes fill the width; the whole story adds
  // the purge deadlines (a day later). While the task is live, "now" is on either.
  let wholeStory = false;
  const axisChoice = h('fieldset', { class: 'axis-choice' }, h('legend', {}, 'Time axis'));
  for (const [value, text] of [
    ['whole', 'callbacks, purge deadlines and now'],
    ['callbacks', 'callbacks only'],
  ] as const) {
    const input = h('input', {
      type: 'radio',
      name: 'axis',
      value,
      id: `axis-${value}`,
      checked: value === 'callbacks',
    });
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
    const domain = domainOf(times, live() ? now : null);
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
    const now = Date.now();
    headerBox.replaceChildren(header(task, now));
    drawFiles();
    drawTimelineNow();
    status.textContent =
      typeof task.stalledSince === 'number'
        ? `Stalled ${relative(task.stalledSince, now).replace(/ ago$/, '')}: no callback has come for longer than ` +
          `its stall time; it waits for the platform's next callback (read again every ${REFRESH_MS / 1000} s).`
        : live()
          ? `Live: read again every ${REFRESH_MS / 1000} s.`
          : '';
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

  // While live, or stalled (a callback of the platform resumes it): read the task again; when it changed, read it
  // all again.
  while (!signal.aborted && (live() || typeof task.stalledSince === 'number')) {
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
