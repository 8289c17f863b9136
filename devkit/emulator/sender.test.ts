import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { canonicalJson } from '../../lib/domain/canonical.ts';
import { computeSignature } from '../../lib/platform/signing.ts';
import { expectedTasks } from './expect.ts';
import { generateRun, type ScheduledSend } from './lifecycles.ts';
import { createRandom } from './random.ts';
import { callbackUrl, checkReachable, percentile, sendAll, type SendProgress } from './sender.ts';

interface Received {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
}

type Answer = (req: Received, attempt: number) => 'ok' | 'hang' | 'close' | number;

/** A real HTTP receiver on 127.0.0.1 that records every request and answers as `answer` says. */
async function startReceiver(answer: Answer = () => 'ok') {
  const received: Received[] = [];
  const attempts = new Map<string, number>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const r: Received = {
        method: req.method ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(r);
      // Attempts are counted per event (key order ignored), as a receiver would see a re-delivery.
      const key = r.body ? canonicalJson(JSON.parse(r.body)) : r.path;
      const attempt = (attempts.get(key) ?? 0) + 1;
      attempts.set(key, attempt);
      const verdict = answer(r, attempt);
      if (verdict === 'hang') return;
      if (verdict === 'close') {
        req.socket.destroy();
        return;
      }
      const status = verdict === 'ok' ? 200 : verdict;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status === 200 ? '{"ok":true}' : '{"error":{"code":"x","message":"x"}}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const SECRET = 'demo-secret';
const run = generateRun({
  seed: 11,
  recordings: 6,
  screenshots: 2,
  appKey: 'demo-app',
  compress: 3600,
  baseTime: 1_763_798_400_000,
});
const fast = { followSchedule: false, backoffMs: 1, maxBackoffMs: 5, concurrency: 4 } as const;

let receiver: Awaited<ReturnType<typeof startReceiver>> | null = null;
afterEach(async () => {
  await receiver?.close();
  receiver = null;
});

test('sends every callback to its route, signed in headers with seconds, and counts them', async () => {
  receiver = await startReceiver();
  const progress: SendProgress[] = [];
  const before = Math.floor(Date.now() / 1000);
  const report = await sendAll({
    ...fast,
    url: receiver.url,
    sends: run.sends,
    random: createRandom(1),
    secret: SECRET,
    sign: 'header',
    onProgress: (p) => progress.push(p),
  });
  const after = Math.floor(Date.now() / 1000);

  expect(receiver.received).toHaveLength(run.sends.length);
  for (const r of receiver.received) {
    expect(r.method).toBe('POST');
    expect(r.headers['content-type']).toBe('application/json');
    const nonce = r.headers['rc-nonce'] as string;
    const timestamp = r.headers['rc-timestamp'] as string;
    expect(nonce).toMatch(/^[0-9a-f]{16}$/);
    expect(Number(timestamp)).toBeGreaterThanOrEqual(before);
    expect(Number(timestamp)).toBeLessThanOrEqual(after);
    expect(r.headers['rc-signature']).toBe(computeSignature(SECRET, nonce, timestamp));
    expect([...r.query.keys()]).toEqual([]);
    const body = JSON.parse(r.body) as Record<string, unknown>;
    expect(r.path).toBe('recordId' in body ? '/callbacks/recording' : '/callbacks/screenshot');
  }
  expect(new Set(receiver.received.map((r) => r.headers['rc-nonce'])).size).toBe(run.sends.length);
  expect(receiver.received.map((r) => r.body).sort()).toEqual(run.sends.map((s) => JSON.stringify(s.body)).sort());

  const s = report.summary;
  expect(s).toMatchObject({
    callbacks: run.sends.length,
    delivered: run.sends.length,
    undelivered: 0,
    requests: run.sends.length,
    status2xx: run.sends.length,
    status4xx: 0,
    status5xx: 0,
    networkErrors: 0,
    retried: 0,
  });
  expect(s.latencyP50Ms).not.toBeNull();
  expect(s.latencyP99Ms!).toBeGreaterThanOrEqual(s.latencyP50Ms!);
  expect(report.results.every((r) => r.delivered && r.attempts === 1 && r.status === 200)).toBe(true);
  expect(progress).toHaveLength(run.sends.length);
  expect(progress.at(-1)).toMatchObject({
    done: run.sends.length,
    total: run.sends.length,
    delivered: run.sends.length,
  });
});

test('signs in the query string on request, and not at all with "none"', async () => {
  receiver = await startReceiver();
  const sends = run.sends.slice(0, 5);
  await sendAll({ ...fast, url: `${receiver.url}/`, sends, random: createRandom(2), secret: SECRET, sign: 'query' });
  for (const r of receiver.received) {
    const nonce = r.query.get('nonce')!;
    const timestamp = r.query.get('timestamp')!;
    expect(r.query.get('signature')).toBe(computeSignature(SECRET, nonce, timestamp));
    expect(r.headers['rc-signature']).toBeUndefined();
  }
  receiver.received.length = 0;
  await sendAll({ ...fast, url: receiver.url, sends, random: createRandom(3), secret: SECRET, sign: 'none' });
  expect(receiver.received).toHaveLength(5);
  for (const r of receiver.received) {
    expect(r.headers['rc-signature']).toBeUndefined();
    expect(r.query.get('signature')).toBeNull();
  }
});

test(
  'retries 503 and dropped connections, gives up after maxAttempts, and leaves undelivered bodies out of the ' +
    'expectation',
  async () => {
    const doomed = run.sends.find((s) => s.service === 'recording')!.taskId;
    const rejected = run.sends.find((s) => s.service === 'screenshot')!.taskId;
    const order = new Map(run.sends.map((s, i) => [canonicalJson(s.body), i]));
    receiver = await startReceiver((r, attempt) => {
      const body = JSON.parse(r.body) as Record<string, unknown>;
      const id = (body.recordId ?? body.imageId) as string;
      if (id === doomed) return 503;
      if (id === rejected && body.type === 4) return 400;
      const i = order.get(canonicalJson(body))!;
      if (attempt === 1 && i % 3 === 0) return 503;
      if (attempt === 1 && i % 3 === 1) return 'close';
      return 'ok';
    });
    const maxAttempts = 3;
    const report = await sendAll({
      ...fast,
      url: receiver.url,
      sends: run.sends,
      random: createRandom(4),
      secret: SECRET,
      maxAttempts,
    });

    const isDoomed = (s: ScheduledSend) => s.taskId === doomed;
    const isRejected = (s: ScheduledSend) => s.taskId === rejected && s.body.type === 4;
    const doomedCount = run.sends.filter(isDoomed).length;
    const rejectedCount = run.sends.filter(isRejected).length;
    const others = run.sends.filter((s) => !isDoomed(s) && !isRejected(s));
    const otherIndices = others.map((s) => order.get(canonicalJson(s.body))!);
    const first503 = otherIndices.filter((i) => i % 3 === 0).length;
    const firstClosed = otherIndices.filter((i) => i % 3 === 1).length;
    expect(rejectedCount).toBeGreaterThan(0);

    const s = report.summary;
    expect(s.delivered).toBe(others.length);
    expect(s.undelivered).toBe(doomedCount + rejectedCount);
    expect(s.status5xx).toBe(doomedCount * maxAttempts + first503);
    expect(s.status4xx).toBe(rejectedCount);
    expect(s.networkErrors).toBe(firstClosed);
    expect(s.retried).toBe(doomedCount * (maxAttempts - 1) + first503 + firstClosed);
    expect(s.requests).toBe(s.status2xx + s.status4xx + s.status5xx + s.networkErrors);
    expect(s.status2xx).toBe(others.length);
    for (const r of report.results) {
      if (isDoomed(r)) expect(r).toMatchObject({ delivered: false, attempts: maxAttempts, status: 503 });
      if (isRejected(r)) expect(r).toMatchObject({ delivered: false, attempts: 1, status: 400 });
    }

    const tasks = expectedTasks(report.results);
    expect(tasks.find((t) => t.id === doomed)).toBeUndefined();
    const shot = tasks.find((t) => t.id === rejected)!;
    // Its uploads were refused: screenshot files are only known from uploads, so the receiver holds none.
    expect(shot.eventCount).toBe(run.sends.filter((s) => s.taskId === rejected).length - rejectedCount);
    expect(shot.files).toEqual([]);
    expect(tasks).toHaveLength(run.tasks.recording + run.tasks.screenshot - 1);
    expect(tasks).toEqual(
      expectedTasks(run.sends.map((send) => ({ ...send, delivered: !isDoomed(send) && !isRejected(send) }))),
    );
  },
);

test('a request that gets no answer times out and is retried, then counted as undelivered', async () => {
  receiver = await startReceiver(() => 'hang');
  const report = await sendAll({
    ...fast,
    url: receiver.url,
    sends: run.sends.slice(0, 2),
    random: createRandom(5),
    maxAttempts: 2,
    timeoutMs: 100,
  });
  expect(report.summary).toMatchObject({
    delivered: 0,
    undelivered: 2,
    requests: 4,
    networkErrors: 4,
    timeouts: 4,
    retried: 2,
  });
  expect(report.results.every((r) => r.error === 'time-out')).toBe(true);
  expect(expectedTasks(report.results)).toEqual([]);
});

test('follows the schedule order and keeps a path prefix of the base URL', async () => {
  receiver = await startReceiver();
  const sends = run.sends.slice(0, 4).map((s, i) => ({ ...s, at: i * 5 }));
  await sendAll({ url: `${receiver.url}/prod`, sends, random: createRandom(6), concurrency: 1 });
  expect(receiver.received.map((r) => r.body)).toEqual(sends.map((s) => JSON.stringify(s.body)));
  expect(receiver.received.every((r) => r.path.startsWith('/prod/callbacks/'))).toBe(true);
});

test('checkReachable fails with one sentence when nothing listens', async () => {
  receiver = await startReceiver();
  await expect(checkReachable(receiver.url)).resolves.toBeUndefined();
  const url = receiver.url;
  await receiver.close();
  receiver = null;
  await expect(checkReachable(url)).rejects.toThrow(/nothing answers at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
});

test('helpers: routes, percentiles', () => {
  expect(callbackUrl('https://x.example/stage/', 'screenshot').href).toBe(
    'https://x.example/stage/callbacks/screenshot',
  );
  expect(() => callbackUrl('ftp://x', 'recording')).toThrow(/http or https/);
  expect(percentile([], 50)).toBeNull();
  expect(percentile([1, 2, 3, 4], 50)).toBe(2);
  expect(
    percentile(
      Array.from({ length: 100 }, (_, i) => i + 1),
      99,
    ),
  ).toBe(99);
});
