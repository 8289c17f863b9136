// The console's entry point: a small router over the two pages (the task list at /console/, a task at
// /console/tasks/<id>). Links inside the console are followed without reloading the page; the browser's
// history and the URL stay the source of truth, so any view can be shared and reloaded.
import { h } from './dom.ts';
import { renderList } from './list.ts';
import { renderTask } from './task.ts';

let current: AbortController | null = null;

function route(): void {
  current?.abort();
  const controller = new AbortController();
  current = controller;
  const main = document.getElementById('main')!;
  const url = new URL(window.location.href);
  const done = (p: Promise<void>) =>
    p.catch((err: unknown) => {
      if (!controller.signal.aborted) {
        main.append(h('p', { class: 'error', role: 'alert' }, `Something went wrong: ${String(err)}`));
      }
    });
  if (url.pathname.startsWith('/console/tasks/')) done(renderTask(main, url, controller.signal));
  else done(renderList(main, url, navigate));
}

function navigate(href: string): void {
  window.history.pushState(null, '', href);
  route();
  const main = document.getElementById('main');
  // Focus moves to the new page's content, as after a page load with a skip link.
  main?.focus();
  window.scrollTo(0, 0);
}

document.addEventListener('click', (event) => {
  const link = (event.target as Element | null)?.closest?.('a');
  if (!link || event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey || link.target) return;
  const url = new URL(link.href, window.location.href);
  if (url.origin !== window.location.origin || !url.pathname.startsWith('/console/')) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});

window.addEventListener('popstate', route);
route();
