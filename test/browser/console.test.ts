// The console in a real browser: Chromium from the system's packages, driven by playwright-core (which
// never downloads a browser), against the local stack in this process (memory mode, a free port), seeded
// with the sender emulator's recording and screenshot lifecycles (storage outages included), applied by the
// worker to the stack's table (the path through the ingest and the queue is test/e2e.test.ts's; the live
// task's callbacks here take it), and with a task whose ids and room are markup and control characters. One
// browser and one page for the whole file (a context of its own for each test would start the browser's page
// processes again each time), but for the live test, which moves its page's clock: a context of its own.
// The facts of time are there too: a stalled task, a lost file and a settled task, found by a sweep run here; and a
// screenshot task of 600 images through a storage outage. Screenshots of each page go to test/browser/screenshots/
// (not committed). Without Chromium the suite is skipped, and says so.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { ensureConsoleBuilt } from '../../cli/console-assets.ts';
import { openTarget, type Target } from '../../devkit/local/target.ts';
import type { Task } from '../../lib/domain/task.ts';
import type { TaskSummary } from '../../lib/domain/task-summary.ts';
import type { EventView } from '../../lib/domain/event-view.ts';
import { expectedTasks } from '../../devkit/emulator/expect.ts';
import { generateRun, type ScheduledSend } from '../../devkit/emulator/lifecycles.ts';
import { createRandom } from '../../devkit/emulator/random.ts';
import { sendAll } from '../../devkit/emulator/sender.ts';
import { chunks } from '../../lib/in-parallel.ts';
import { taskGroupId } from '../../lib/fifo-ids.ts';
import { startLocalStack, type LocalStack } from '../../devkit/local/stack.ts';
import { recordingFileClosed, recordingStart, recordingUpload, type RecordingTask } from '../../lib/platform/bodies.ts';
import { verifyTasks } from '../../devkit/verify/verify.ts';
import { DynamoTaskStore } from '../../lib/aws/dynamo/read/task-store.ts';
import { createLogger } from '../../lib/log.ts';
import { processBatch } from '../../lib/worker/process-batch.ts';
import { TableClient } from '../../lib/aws/dynamo/table/table-client.ts';
import { TaskSweeps } from '../../lib/aws/dynamo/time/task-sweeps.ts';
import { defaultTimeSettings } from '../../lib/domain/deadlines.ts';
import { sweep } from '../../lib/sweeper/sweep.ts';
import { storedBeforeTheNameRule } from '../support/names-before-the-rule.ts';
import { sqsEvent, sqsRecord } from '../support/sqs-events.ts';
import { eventually } from '../support/eventually.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  process.stderr.write(
    `\nThe console's browser tests are SKIPPED: no Chromium at ${CHROMIUM} (apt-get install chromium, or set ` +
      'CHROMIUM_PATH).\n\n',
  );
}
const suite = haveChromium ? describe : describe.skip;
const CONTEXT_OPTIONS = { viewport: { width: 1400, height: 900 } } as const;
const screenshots = fileURLToPath(new URL('./screenshots/', import.meta.url));

/** Markup, a C0 control and a right-to-left override: what an attacker may put in the ids. */
const HOSTILE_ID = 'rec-<img src=x onerror=window.__xss=1>\u0007\u202eevil';
const HOSTILE_ROOM = '<script>window.__xss=2</script>\u0001room';
const HOSTILE_SHOWN = 'rec-<img src=x onerror=window.__xss=1>\\u0007\\u202eevil';

/** The hostile names as the bodies carry them; the store writes the names (test/support/names-before-the-rule.ts). */
const STAND_INS = { 'rec-hostile-id-stand-in': HOSTILE_ID, 'room-hostile-stand-in': HOSTILE_ROOM } as const;

/**
 * The hostile task, applied by the worker into a store that holds such names as a table from before the name
 * rule does (the ingest refuses control characters in names today; markup it accepts).
 */
async function storeHostileTask(stack: LocalStack, now: number): Promise<void> {
  const task: RecordingTask = {
    appKey: 'demo-app',
    recordId: 'rec-hostile-id-stand-in',
    roomId: 'room-hostile-stand-in',
    sessionId: 'session-"quoted"&amp;',
    userId: '',
    mode: 3,
    extra: '<b>extra</b>',
  };
  const file = 'javascript-file.mp4';
  const bodies = [
    recordingStart(
      task,
      now - 60_000,
      { code: 200, message: 'success' },
      { trigger: 0 },
      {
        fileName: file,
        audioSample: 48000,
        videoResoulation: '1280x720',
      },
    ),
    recordingFileClosed(task, 3, now - 30_000, { code: 200, message: 'success' }, { fileName: file, fileSize: 10 }),
    // A URL that must not become a link.
    {
      ...recordingUpload(task, now - 20_000, { code: 200, message: 'success' }, file),
      output: {
        fileName: file,
        fileUrl: 'javascript:window.__xss=3',
      },
    },
  ];
  const store = new DynamoTaskStore({
    client: stack.tableClient(),
    tableName: stack.info.tableName,
  });
  const records = bodies.map((body) => sqsRecord('recording', JSON.stringify(body), { receivedAt: now }));
  const result = await processBatch(sqsEvent(records), {
    store: storedBeforeTheNameRule(store, STAND_INS),
    log: createLogger('test'),
  });
  expect(result.batchItemFailures).toEqual([]);
}

const HOUR = 3_600_000;
/** The facts of time are due at once (a new task is armed in the bucket of its SETTLE_AFTER of 1 ms). */
const ARMED_AT_ONCE = { ...defaultTimeSettings, settleAfterMs: 1 };

/**
 * Three tasks whose facts of time a sweep finds: a screenshot task silent for two hours (stalled), a recording
 * whose only file failed 25 hours ago (lost), and a recording completed an hour ago (settled); then the sweep, as
 * the sweeper would run it a few minutes from now.
 */
async function storeFactsOfTime(stack: LocalStack, now: number): Promise<void> {
  const store = new DynamoTaskStore({
    client: stack.tableClient(),
    tableName: stack.info.tableName,
    time: ARMED_AT_ONCE,
  });
  const recording = (recordId: string): RecordingTask => ({
    appKey: 'demo-app',
    recordId,
    roomId: 'room-facts',
    sessionId: 'session-facts',
    userId: '',
    mode: 3,
    extra: '',
  });
  const ok = { code: 200, message: 'success' };
  const failedUpload = { code: 500, message: 'upload to storage failed' };
  const output = (fileName: string) => ({ fileName, audioSample: 48000, videoResoulation: '1280x720' });
  const lost = recording('rec-facts-lost');
  const settled = recording('rec-facts-settled');
  const bodies: [string, Record<string, unknown>][] = [
    [
      'screenshot',
      {
        timestamp: now - 2 * HOUR,
        type: 1,
        appKey: 'demo-app',
        imageId: 'img-facts-stalled',
        roomId: 'room-facts',
        sessionId: 'session-facts',
        userId: 'user-facts',
        code: 200,
        errorMessage: 'success',
        config: { trigger: 1, slicesSec: 10, renderMode: 0, picResolution: '640x360' },
      },
    ],
    ['recording', recordingStart(lost, now - 27 * HOUR, ok, { trigger: 0 }, output('lost.mp4'))],
    ['recording', recordingFileClosed(lost, 3, now - 26 * HOUR, ok, { fileName: 'lost.mp4', fileSize: 10 })],
    ['recording', recordingUpload(lost, now - 25 * HOUR, failedUpload, 'lost.mp4')],
    ['recording', recordingStart(settled, now - HOUR, ok, { trigger: 0 }, output('settled.mp4'))],
    ['recording', recordingFileClosed(settled, 3, now - HOUR + 60_000, ok, { fileName: 'settled.mp4', fileSize: 10 })],
    ['recording', recordingUpload(settled, now - HOUR + 70_000, ok, 'settled.mp4')],
  ];
  const records = bodies.map(([service, body]) =>
    sqsRecord(service as 'recording' | 'screenshot', JSON.stringify(body), { receivedAt: now }),
  );
  const result = await processBatch(sqsEvent(records), { store, log: createLogger('test') });
  expect(result.batchItemFailures).toEqual([]);
  const swept = await sweep(now + 6 * 60_000, {
    sweeps: new TaskSweeps(new TableClient(stack.tableClient(), stack.info.tableName)),
    events: { publish: async () => {} },
    time: ARMED_AT_ONCE,
    log: createLogger('test'),
    lookBackMs: 3 * HOUR,
  });
  // The run stored before has facts of time of its own, due within the look-back or not by the time of day the test
  // runs: the sweep's totals are at least these three tasks', and each of the three reads as its fact says.
  expect(swept).toMatchObject({ failed: 0, refused: 0 });
  for (const fact of ['stalled', 'lost', 'settled'] as const) expect(swept[fact]).toBeGreaterThanOrEqual(1);
  const read = async (id: string) =>
    ((await (await fetch(`${stack.url}/tasks/${id}?appKey=demo-app`)).json()) as { task: Task }).task;
  expect((await read('img-facts-stalled')).stalledSince).not.toBeNull();
  expect((await read('rec-facts-lost')).files.map((f) => f.upload)).toEqual(['lost']);
  expect((await read('rec-facts-settled')).settledAt).not.toBeNull();
}

/**
 * The run's callbacks applied by the worker to the stack's table in the order they were sent, ten a batch, as
 * the FIFO queue delivers what the ingest enqueues (a message group per task).
 */
async function storeRun(stack: LocalStack, sends: readonly ScheduledSend[], receivedAt: number): Promise<void> {
  const store = new DynamoTaskStore({
    client: stack.tableClient(),
    tableName: stack.info.tableName,
  });
  let sequence = 10n ** 19n;
  for (const batch of chunks(sends, 10)) {
    const records = batch.map((send) =>
      sqsRecord(send.service, JSON.stringify(send.body), {
        receivedAt,
        groupId: taskGroupId(String(send.body.appKey), send.taskId),
        sequenceNumber: String(sequence++),
      }),
    );
    const result = await processBatch(sqsEvent(records), { store, log: createLogger('test') });
    expect(result.batchItemFailures).toEqual([]);
  }
}

suite('the console in Chromium', () => {
  let cwd: string;
  let stack: LocalStack;
  let target: Target;
  let browser: Browser;
  /** The page of the file's tests, and the live test's own while it runs. */
  let page: Page;
  let shared: Page;
  let base: string;
  let outageTaskId: string;
  const api = async <T>(path: string): Promise<T> => (await (await fetch(`${stack.url}${path}`)).json()) as T;
  const allTasks = async (): Promise<TaskSummary[]> => {
    const out: TaskSummary[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const p: { tasks: TaskSummary[]; nextCursor: string | null } = await api(`/tasks?limit=200${q}`);
      out.push(...p.tasks);
      cursor = p.nextCursor;
    } while (cursor);
    return out;
  };
  /** The list page has its answer (the tasks, or a refusal). */
  const listed = () =>
    page
      .locator('.status-line')
      .filter({ hasText: /^(?!Loading)./ })
      .waitFor();
  const shot = (name: string) => page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    await mkdir(screenshots, { recursive: true });
    cwd = await mkdtemp(join(tmpdir(), 'callbacks-console-'));
    const consoleDir = await ensureConsoleBuilt();
    // The sweeper runs here, on demand (storeFactsOfTime), not on a schedule.
    stack = await startLocalStack({
      port: 0,
      memory: true,
      cwd,
      quiet: true,
      retryDelaySeconds: 1,
      consoleDir,
      scheduleEveryMs: 0,
    });
    target = await openTarget({ cwd, env: {} });
    base = `${stack.url}/console/`;
    const now = Date.now();
    const run = generateRun({
      seed: 'console-browser',
      recordings: 4,
      screenshots: 4,
      appKey: 'demo-app',
      compress: 3600 * 24,
      outage: 0.6,
      giveUp: 0.3,
      failedStarts: 0.1,
      now,
    });
    const sends = [...run.sends].sort((a, b) => a.at - b.at);
    await storeRun(stack, sends, now);
    // The table holds what the callbacks make, read through the stack file as the CLI reads it.
    const verified = await verifyTasks({
      expected: expectedTasks(sends.map((send) => ({ ...send, delivered: true }))),
      getTask: (id, appKey) => target.tasks.getTask(id, appKey),
      waitForDrain: async () => true,
      timeoutMs: 10_000,
      pollIntervalMs: 250,
      settleMs: 0,
    });
    expect(verified).toMatchObject({ ok: true, checked: 8 });
    await storeHostileTask(stack, now);
    await storeFactsOfTime(stack, now);
    // A screenshot task of 600 images over two hours, through a storage outage of three minutes half an hour in.
    const outage = generateRun({
      seed: 'console-outage',
      recordings: 0,
      screenshots: 1,
      appKey: 'demo-app',
      compress: 3600,
      images: 600,
      durationMs: 2 * HOUR,
      outageWindow: { startMs: HOUR / 2, forMs: 3 * 60_000 },
      now,
    });
    await storeRun(
      stack,
      [...outage.sends].sort((a, b) => a.at - b.at),
      now,
    );
    outageTaskId = outage.sends[0]!.taskId;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    shared = page = await newPage(await browser.newContext(CONTEXT_OPTIONS));
  }, 120_000);

  const newPage = async (context: BrowserContext) => {
    const opened = await context.newPage();
    opened.on('dialog', (d) => void d.dismiss());
    return opened;
  };
  /** A test that changes what outlives it (its clock) runs in a context of its own, closed after it. */
  let own: BrowserContext | undefined;
  const ownContext = async () => {
    own = await browser.newContext(CONTEXT_OPTIONS);
    page = await newPage(own);
  };
  afterEach(async () => {
    await own?.close();
    own = undefined;
    page = shared;
  });

  afterAll(async () => {
    await browser?.close();
    await target?.close();
    await stack?.stop();
    if (cwd) await rm(cwd, { recursive: true, force: true });
  });

  test('the list shows the tasks newest first with their status in words and colour, under a CSP', async () => {
    const res = await page.goto(base);
    expect(res?.headers()['content-security-policy']).toMatch(/^default-src 'self'/);
    await page.waitForSelector('table.tasks tbody tr');
    const listed = await api<{ tasks: TaskSummary[] }>('/tasks');
    const ids = await page.locator('table.tasks tbody th a').allTextContents();
    expect(ids.length).toBe(listed.tasks.length);
    expect(ids.length).toBeGreaterThanOrEqual(9);
    const firstRow = page.locator('table.tasks tbody tr').first();
    const status = listed.tasks[0]!.status;
    await expect(firstRow.locator('.status').textContent()).resolves.toContain(status.replace('_', ' '));
    expect(await firstRow.locator('.status').getAttribute('class')).toContain(`status-${status}`);
    await shot('list');
  });

  test('the filters go into the URL and narrow the list as GET /tasks does', async () => {
    await page.goto(base);
    await page.waitForSelector('table.tasks tbody tr');
    await page.getByLabel('Service').selectOption('screenshot');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/service=screenshot/);
    await listed();
    const services = await page.locator('table.tasks tbody td:nth-child(2)').allTextContents();
    expect(services.length).toBe((await api<{ tasks: unknown[] }>('/tasks?service=screenshot')).tasks.length);
    expect(new Set(services)).toEqual(new Set(['screenshot']));
    // A shared URL gives the same view: the form shows its filters.
    const room = (await allTasks()).find((t) => t.service === 'recording' && t.id !== HOSTILE_ID)!.roomId!;
    await page.goto(`${base}?room=${encodeURIComponent(room)}`);
    await page.waitForSelector('table.tasks tbody tr');
    expect(await page.getByLabel('Room').inputValue()).toBe(room);
    const rooms = await page.locator('table.tasks tbody td:nth-child(4)').allTextContents();
    expect(new Set(rooms)).toEqual(new Set([room]));
    // A refused filter is the API's sentence, in an alert.
    await page.goto(`${base}?since=yesterday-ish`);
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/since.*invalid_query/);
  });

  /** The row of the list that links to this task. */
  const rowOf = (id: string) =>
    page.locator('table.tasks tbody tr').filter({ has: page.getByRole('link', { name: id }) });

  test('the list said "● capturing" of a stalled task, "0 failed" of a lost file: each state in words', async () => {
    await page.goto(`${base}?limit=200`);
    await page.waitForSelector('table.tasks tbody tr');
    const stalled = rowOf('img-facts-stalled').locator('.status');
    await expect(stalled.textContent()).resolves.toBe('⏸ stalled · capturing');
    expect(await stalled.getAttribute('class')).toContain('is-stalled');
    await expect(rowOf('rec-facts-settled').locator('.status').textContent()).resolves.toBe('✓ completed · ◆ settled');
    // The lost file counted as lost, not as a failure among others (nor as none).
    await expect(rowOf('rec-facts-lost').locator('td').nth(8).textContent()).resolves.toBe('1, ⊘ 1 lost');
    // Times relative beside absolute; an id on one line, never wrapped mid-word.
    await expect(rowOf('rec-facts-lost').locator('td').nth(6).textContent()).resolves.toMatch(/UTC \(27 h ago\)$/);
    const id = page.getByRole('link', { name: outageTaskId });
    expect(await id.evaluate((el) => el.ownerDocument.defaultView!.getComputedStyle(el).whiteSpace)).toBe('nowrap');
    const { height, lineHeight } = await id.evaluate((el) => ({
      height: el.getBoundingClientRect().height,
      lineHeight: Number.parseFloat(el.ownerDocument.defaultView!.getComputedStyle(el).lineHeight) || 20,
    }));
    expect(height).toBeLessThan(1.5 * lineHeight);
    await shot('list-states');
  });

  test('the filters of the facts of time: lost files, stalled tasks, a purge within a while', async () => {
    await page.goto(base);
    await page.waitForSelector('table.tasks tbody tr');
    await page.getByLabel('With lost files').check();
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/lost=true/);
    await listed();
    expect(await page.locator('table.tasks tbody th a').allTextContents()).toEqual(
      (await api<{ tasks: TaskSummary[] }>('/tasks?lost=true')).tasks.map((t) => t.id),
    );
    expect(await page.locator('table.tasks tbody th a').allTextContents()).toContain('rec-facts-lost');
    await page.goto(`${base}?stalled=true`);
    await listed();
    expect(await page.getByLabel('Stalled').isChecked()).toBe(true);
    expect(await page.locator('table.tasks tbody th a').allTextContents()).toEqual(['img-facts-stalled']);
    await page.goto(base);
    await page.getByLabel('Purge within').fill('24h');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/purgeBefore=24h/);
    await listed();
    expect(await page.locator('table.tasks tbody th a').allTextContents()).toEqual(
      (await api<{ tasks: TaskSummary[] }>('/tasks?purgeBefore=24h')).tasks.map((t) => t.id),
    );
  });

  test("a stalled task's page says it waits for the platform, not that it is live; lost, settled too", async () => {
    await openTask({ id: 'img-facts-stalled', appKey: 'demo-app' });
    const header = async () =>
      Object.fromEntries(
        await page.$$eval('dl.header dt', (dts) =>
          dts.map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]),
        ),
      );
    expect((await header()).Status).toBe('⏸ stalled · capturing');
    expect((await header())['Stalled since']).toMatch(
      /UTC \(.+\): no callback since; it waits for the platform's next one$/,
    );
    await expect(page.locator('#main > p.status-line').textContent()).resolves.toMatch(
      /^Stalled \d+ (min|h): no callback has come for longer than its stall time; it waits for the platform's next/,
    );
    await shot('task-stalled');
    await openTask({ id: 'rec-facts-lost', appKey: 'demo-app' });
    expect((await header()).Files).toBe('1 (0 pending, 0 failed, 1 lost)');
    const outcome = page.locator('table.files tbody tr').first().locator('td.outcome');
    expect(await outcome.getAttribute('class')).toContain('outcome-lost');
    await expect(outcome.textContent()).resolves.toMatch(/^⊘ lost \(code 500/);
    await shot('task-lost');
    await openTask({ id: 'rec-facts-settled', appKey: 'demo-app' });
    // Settled a minute after its last change (the sweep ran ahead of the wall clock here).
    expect((await header())['Settled at']).toMatch(/ UTC \((in \d+ s|\d+ s ago|now)\)$/);
    expect((await header()).Status).toBe('✓ completed · ◆ settled');
  });

  test("a big task's outage was 100 red lines: one window in its events, its recovered error no error", async () => {
    await openTask({ id: outageTaskId, appKey: 'demo-app' });
    // The axis spans the callbacks by default.
    expect(await page.getByLabel('callbacks only').isChecked()).toBe(true);
    const red = page.locator('ol.events li.ev-outage, ol.events li.ev-upload_failed');
    expect(await red.count()).toBe(1);
    await expect(red.first().textContent()).resolves.toMatch(
      /Storage outage from .* UTC to .* UTC \(\d+ min \d+ s\): \d+ files failed, \d+ attempts in all \(/,
    );
    const failedFiles = Number(/: (\d+) files failed/.exec((await red.first().textContent())!)![1]);
    expect(failedFiles).toBeGreaterThan(10);
    await expect(page.locator('ol.events li.ev-upload_recovered').textContent()).resolves.toMatch(
      new RegExp(`${failedFiles} of the outage's ${failedFiles} files uploaded after it, the last at`),
    );
    // Completed: its last error is one it recovered from, not shown as an error.
    const lastError = page.locator('dl.header dd').filter({ hasText: 'recovered from:' });
    expect(await lastError.count()).toBe(1);
    expect(await page.locator('dl.header .error-text').count()).toBe(0);
    await shot('task-outage');
  });

  test('pages follow the API cursors: every task once, in the API order', async () => {
    const all = await allTasks();
    await page.goto(`${base}?limit=3`);
    const seen: string[] = [];
    for (;;) {
      await listed();
      seen.push(...(await page.locator('table.tasks tbody th a').allTextContents()));
      const next = page.getByRole('link', { name: 'Next page →' });
      if ((await next.count()) === 0) break;
      await next.click();
      await page.waitForURL(/cursor=/);
    }
    expect(seen.length).toBeGreaterThan(6);
    expect(seen).toEqual(
      all.map((t) =>
        t.id.replace(/[\u0000-\u001f\u202e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
      ),
    );
  });

  /** Every stored callback of a task, through the read API. */
  const allEvents = async (id: string): Promise<EventView[]> => {
    const out: EventView[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const p: { events: EventView[]; nextCursor: string | null } = await api(
        `/tasks/${encodeURIComponent(id)}/events?limit=500${q}`,
      );
      out.push(...p.events);
      cursor = p.nextCursor;
    } while (cursor);
    return out;
  };
  /** The sum of the counts the timeline drew for one kind of mark. */
  const drawn = (kind: string) =>
    page.$$eval(`svg.timeline .mark[data-kind="${kind}"]`, (els) =>
      els.reduce((n, el) => n + Number(el.getAttribute('data-count')), 0),
    );
  /** The task page has read all the task's callbacks. */
  const timelineRead = () => page.locator('#timeline-h + p').filter({ hasText: /^All/ }).waitFor();
  const openTask = async (t: Pick<TaskSummary, 'id' | 'appKey'>) => {
    await page.goto(`${base}tasks/${encodeURIComponent(t.id)}?appKey=${encodeURIComponent(t.appKey)}`);
    await timelineRead();
  };
  const isOkUpload = (e: EventView) => {
    const body = e.body as { code?: unknown; output?: { fileState?: unknown } };
    return body.output?.fileState !== undefined ? body.output.fileState === '10000' : Number(body.code) === 200;
  };

  test.each(['recording', 'screenshot'] as const)(
    "a %s task's page: its header, a timeline mark for each callback, its files and purge deadlines",
    async (service) => {
      // The task of that service with the most failed uploads: the one that went through an outage.
      const tasks = (await allTasks()).filter((t) => t.service === service && t.id !== HOSTILE_ID);
      const summary = tasks.sort((a, b) => b.failedFiles - a.failedFiles || b.eventCount - a.eventCount)[0]!;
      const { task } = await api<{ task: Task }>(`/tasks/${encodeURIComponent(summary.id)}?filesLimit=1000`);
      const events = await allEvents(task.id);
      await openTask(task);

      const header = Object.fromEntries(
        await page.$$eval('dl.header dt', (dts) =>
          dts.map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]),
        ),
      );
      expect(header).toMatchObject({
        'Task id': task.id,
        Room: task.roomId,
        Session: task.sessionId,
        appKey: 'demo-app',
      });
      expect(header.Status).toContain(task.status.replace('_', ' '));
      expect(header.Callbacks).toBe(task.eventCount.toLocaleString('en-US'));

      const uploads = events.filter((e) => e.type === 4);
      expect(await drawn('upload_ok')).toBe(uploads.filter(isOkUpload).length);
      expect(await drawn('upload_failed')).toBe(uploads.filter((e) => !isOkUpload(e)).length);
      expect(await drawn('slice')).toBe(events.filter((e) => e.type === 2).length);
      expect((await drawn('start')) + (await drawn('start_failed'))).toBe(events.filter((e) => e.type === 1).length);
      expect((await drawn('end')) + (await drawn('end_failed'))).toBe(events.filter((e) => e.type === 3).length);
      const purges = task.files.filter((f) => f.purgeAt !== null);
      expect(await drawn('purge')).toBe(purges.length);
      if (service === 'screenshot') expect(purges.length).toBeGreaterThan(0);

      const rows = page.locator('table.files tbody tr');
      expect(await rows.count()).toBe(Math.min(200, task.files.length));
      // The failed (and lost) files first; with the box ticked, those alone.
      const failing = task.files.filter((f) => f.upload === 'failed' || f.upload === 'lost').length;
      const outcomes = await page.$$eval('table.files td.outcome', (tds) => tds.map((td) => td.className));
      expect(outcomes.slice(0, failing).every((c) => /outcome-(failed|lost)/.test(c))).toBe(true);
      await page.getByLabel('Failed and lost files only').check();
      expect(await rows.count()).toBe(Math.min(200, failing));
      await page.getByLabel('Failed and lost files only').uncheck();
      const hrefs = await page.$$eval('table.files a', (as) => as.map((a) => a.getAttribute('href')));
      expect(hrefs.length).toBe(task.files.filter((f) => f.url).length);
      for (const href of hrefs) expect(href).toMatch(/^https?:\/\//);
      for (const p of purges.slice(0, 3)) {
        await expect(page.locator('ol.events').textContent()).resolves.toContain(`Purge deadline of ${p.fileName}`);
      }
      await shot(`task-${service}`);
    },
  );

  test('the raw callbacks come a page at a time, each expanding to its JSON', async () => {
    const busiest = (await allTasks()).sort((a, b) => b.eventCount - a.eventCount)[0]!;
    expect(busiest.eventCount).toBeGreaterThan(25);
    const events = await allEvents(busiest.id);
    await openTask(busiest);
    const items = page.locator('ol.callbacks > li');
    await items.first().waitFor();
    expect(await items.count()).toBe(25);
    await items.first().locator('summary').click();
    const json = JSON.parse((await items.first().locator('pre').textContent())!);
    expect(json).toEqual(events[0]);
    await page.getByRole('button', { name: 'Next callbacks →' }).click();
    await page.locator('ol.callbacks[start="26"]').waitFor();
    await page.locator('ol.callbacks > li').first().locator('summary').click();
    const second = JSON.parse((await page.locator('ol.callbacks > li pre').first().textContent())!);
    expect(second).toEqual(events[25]);
  });

  test("a task begun before the table's retention: its raw callbacks say its older ones are archived", async () => {
    const task: RecordingTask = {
      appKey: 'demo-app',
      recordId: 'rec-archived-console',
      roomId: 'room-archived',
      sessionId: 'session-archived',
      userId: '',
      mode: 3,
      extra: '',
    };
    const at = Date.now() - 10 * 24 * HOUR;
    const start = recordingStart(
      task,
      at,
      { code: 200, message: 'success' },
      { trigger: 0 },
      {
        fileName: 'archived.mp4',
        audioSample: 48000,
        videoResoulation: '1280x720',
      },
    );
    const store = new DynamoTaskStore({ client: stack.tableClient(), tableName: stack.info.tableName });
    const records = [sqsRecord('recording', JSON.stringify(start), { receivedAt: at })];
    expect((await processBatch(sqsEvent(records), { store, log: createLogger('test') })).batchItemFailures).toEqual([]);
    await openTask({ id: task.recordId, appKey: task.appKey });
    const note = page.locator('.raw p.archived');
    await note.waitFor();
    // The read API's `archived`, in the sentence the CLI prints too.
    const said = (await note.textContent()) ?? '';
    expect(said).toMatch(
      /^Callbacks received before \S+ are no longer in the table, .* callbacks archive query "SELECT /,
    );
    expect(said).toMatch(/ AND task_id = 'rec-archived-console' ORDER BY received_at"$/);
    await page.locator('ol.callbacks > li').first().waitFor();
  });

  test('ids, room and URLs holding markup and control characters render as text, and nothing runs', async () => {
    await page.goto(base);
    await page.waitForSelector('table.tasks tbody tr');
    const link = page.getByRole('link', { name: HOSTILE_SHOWN });
    expect(await link.count()).toBe(1);
    await expect(page.locator('table.tasks').textContent()).resolves.toContain(
      '<script>window.__xss=2</script>\\u0001room',
    );
    await link.click();
    await timelineRead();
    await expect(page.locator('h1').textContent()).resolves.toBe(`Recording ${HOSTILE_SHOWN}`);
    await expect(page.locator('dl.header').textContent()).resolves.toContain('<b>extra</b>');
    // The upload's "URL" is javascript: text, not a link.
    await expect(page.locator('table.files').textContent()).resolves.toContain('javascript:window.__xss=3');
    expect(await page.locator('table.files a').count()).toBe(0);
    expect(await page.locator('main img, main script, main b').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as Record<string, unknown>).__xss)).toBeUndefined();
    await shot('task-hostile');
  });

  test('a live task is read again and redrawn when a callback arrives, with "now" on its axis', async () => {
    const task: RecordingTask = {
      appKey: 'demo-app',
      recordId: 'rec-live-1',
      roomId: 'room-live',
      sessionId: 'session-live',
      userId: '',
      mode: 3,
      extra: '',
    };
    const send = (body: Record<string, unknown>) =>
      sendAll({
        url: stack.url,
        sends: [{ service: 'recording', body, at: 0, taskId: task.recordId, duplicate: false }],
        random: createRandom(`live-${body.type}`),
        secret: 'demo-secret',
        sign: 'header',
      });
    const now = Date.now();
    const output = { fileName: 'live-0.mp4', audioSample: 48000, videoResoulation: '1280x720' };
    await send(recordingStart(task, now - 5000, { code: 200, message: 'success' }, { trigger: 0 }, output));
    const waitFor = (path: string, ok: (body: { task: Task }) => boolean) =>
      eventually(
        path,
        async () => {
          const res = await fetch(`${stack.url}${path}`);
          return res.ok ? ((await res.json()) as { task: Task }) : null;
        },
        (body) => body !== null && ok(body),
        { timeoutMs: 10_000 },
      );
    await waitFor('/tasks/rec-live-1', () => true);
    // The page's clock runs as the wall clock does, and is moved on to the next reading rather than waited for.
    await ownContext();
    await page.clock.install();
    await openTask({ id: task.recordId, appKey: task.appKey });
    await expect(page.locator('#main > p.status-line').textContent()).resolves.toMatch(/^Live: read again/);
    expect(await page.locator('svg.timeline .now').count()).toBe(1);
    expect(await drawn('slice')).toBe(0);
    await send(
      recordingFileClosed(
        task,
        2,
        now - 1000,
        { code: 200, message: 'success' },
        {
          fileName: 'live-0.mp4',
          fileSize: 1000,
        },
      ),
    );
    await waitFor('/tasks/rec-live-1', (b) => b.task.eventCount === 2);
    // The console's REFRESH_MS (console/src/task.ts): the live page reads the task again.
    await page.clock.fastForward(5_000);
    await page.locator('svg.timeline .mark[data-kind="slice"]').waitFor({ state: 'attached', timeout: 15_000 });
    expect(await drawn('slice')).toBe(1);
    // The raw callbacks are read again too.
    await page.locator('ol.callbacks > li').nth(1).waitFor();
    expect(await page.locator('ol.callbacks > li').count()).toBe(2);
    await shot('task-live');
  }, 30_000);

  test('a task of 100,000 images is drawn in binned columns, every image counted, in seconds', async () => {
    const total = 100_000;
    const start = Date.UTC(2026, 10, 20, 8);
    // An image a second, a 2-hour gap in the middle, a failure every 1,000.
    const timeOf = (i: number) => start + i * 1000 + (i >= total / 2 ? 2 * 3600_000 : 0);
    const huge: Task = {
      service: 'screenshot',
      id: 'img-huge',
      appKey: 'demo-app',
      roomId: 'room-huge',
      sessionId: 'session-huge',
      userId: null,
      status: 'upload_failed',
      startedAt: start,
      endedAt: timeOf(total - 1) + 1000,
      updatedAt: timeOf(total - 1) + 1000,
      extra: null,
      config: { interval: 1 },
      counts: { total: 1, pending: 0, uploaded: 0, failed: 1, lost: 0 },
      // One file given up on: its purge deadline is a day after the images.
      files: [
        {
          fileName: 'i0.jpg',
          size: null,
          url: null,
          upload: 'failed',
          code: 10002,
          message: 'storage unreachable',
          attempts: 1,
          purgeAt: timeOf(total - 1) + 24 * 3600_000,
        },
      ],
      lastError: null,
      eventCount: total,
      stalledSince: null,
      settledAt: null,
    };
    const event = (i: number): EventView => ({
      key: `k${i}`,
      type: 4,
      timestamp: timeOf(i),
      receivedAt: timeOf(i) + 50,
      verdict: 'valid',
      requestId: null,
      expiresAt: null,
      body: { type: 4, code: 200, output: { fileName: `i${i}.jpg`, fileState: i % 1000 === 0 ? '10002' : '10000' } },
    });
    let requests = 0;
    await page.route(
      (url) => url.pathname.startsWith('/tasks/img-huge'),
      (route) => {
        requests++;
        const url = new URL(route.request().url());
        if (url.pathname === '/tasks/img-huge') {
          return route.fulfill({ json: { task: huge, nextFilesCursor: null } });
        }
        const from = Number(url.searchParams.get('cursor') ?? 0);
        const limit = Number(url.searchParams.get('limit') ?? 100);
        const to = Math.min(total, from + limit);
        const events = Array.from({ length: to - from }, (_, k) => event(from + k));
        return route.fulfill({ json: { events, nextCursor: to < total ? String(to) : null } });
      },
    );
    const began = Date.now();
    await page.goto(`${base}tasks/img-huge?appKey=demo-app`);
    await page.locator('#timeline-h + p').filter({ hasText: /^All/ }).waitFor({ timeout: 60_000 });
    const took = Date.now() - began;
    expect(await drawn('upload_ok')).toBe(total - total / 1000);
    expect(await drawn('upload_failed')).toBe(total / 1000);
    // At most one element per kind and 3-pixel column, whatever the count.
    const elements = await page.locator('svg.timeline .mark').count();
    expect(elements).toBeLessThan(1200);
    expect(requests).toBeGreaterThanOrEqual(total / 500);
    await expect(page.locator('#timeline-h + p').textContent()).resolves.toContain('All 100,000 of 100,000 callbacks');
    await shot('task-100k');
    // The axis is the callbacks' by default: the purge deadline a day later is beyond it, on the whole story's.
    expect(await drawn('purge')).toBe(0);
    await expect(page.locator('#timeline-h + p').textContent()).resolves.toContain(
      '1 purge deadline (1 beyond the axis)',
    );
    await page.getByLabel('callbacks, purge deadlines and now').check();
    expect(await drawn('purge')).toBe(1);
    expect(await drawn('upload_ok')).toBe(total - total / 1000);
    // The two hours without an image, said in words.
    await expect(page.locator('ol.events li.ev-gap').textContent()).resolves.toMatch(
      /No callback for 2 h 0 min, from .* UTC to .* UTC$/,
    );
    await page.unroute((url) => url.pathname.startsWith('/tasks/img-huge'));
    process.stdout.write(`100,000 images: timeline complete in ${took} ms, ${elements} SVG marks\n`);
    expect(took).toBeLessThan(40_000);
  }, 90_000);

  test('the keyboard reaches everything in order: skip link, filters, tasks, and a task opens with Enter', async () => {
    await page.goto(base);
    await page.waitForSelector('table.tasks tbody tr');
    await page.keyboard.press('Tab');
    await expect(page.locator(':focus').textContent()).resolves.toBe('Skip to content');
    await page.keyboard.press('Enter');
    const order: string[] = [];
    for (let i = 0; i < 20; i++) {
      await page.keyboard.press('Tab');
      const focused = page.locator(':focus');
      order.push((await focused.getAttribute('id')) ?? (await focused.textContent()) ?? '');
      if ((await focused.getAttribute('href'))?.startsWith('/console/tasks/')) break;
    }
    expect(order.slice(0, 12)).toEqual([
      'filter-room',
      'filter-session',
      'filter-status',
      'filter-appKey',
      'filter-service',
      'filter-user',
      'filter-since',
      'filter-until',
      'filter-lost',
      'filter-stalled',
      'filter-purgeBefore',
      'filter-limit',
    ]);
    expect(order.slice(12, 14)).toEqual(['Apply filters', 'Clear']);
    const first = (await api<{ tasks: TaskSummary[] }>('/tasks')).tasks[0]!;
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/tasks\//);
    await timelineRead();
    await expect(page.locator('dl.header dd').nth(1).textContent()).resolves.toBe(
      first.id.replace(/[\u0000-\u001f\u202e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
    );
  });

  test('an unknown task, or an address that names none, is said in an alert', async () => {
    await page.goto(`${base}tasks/no-such-task`);
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/\(not_found\)$/);
    await page.goto(`${base}tasks/%E0%A4%A`);
    await expect(page.getByRole('alert').textContent()).resolves.toBe(
      'This address names no task: its id is not percent-encoded UTF-8.',
    );
  });
});
