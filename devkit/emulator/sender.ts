// Sends scheduled callbacks the way the platform does: one POST per callback to the service's route,
// signed with sha1(secret + nonce + timestamp) (timestamp in seconds, as the platform's SDKs sign),
// retried on 503, other 5xx, 408/429, network errors and time-outs with exponential back-off. Every loop
// is bounded: at most `maxAttempts` tries per callback, each with a time-out.
import type { Service } from '../../lib/platform/services.ts';
import { computeSignature } from '../../lib/platform/signing.ts';
import type { ScheduledSend } from './lifecycles.ts';
import type { Random } from './random.ts';
import { errorSentence } from '../../lib/text.ts';
import { inParallel } from '../../lib/in-parallel.ts';

export const SIGN_PLACEMENTS = ['header', 'query', 'none'] as const;
export type SignPlacement = (typeof SIGN_PLACEMENTS)[number];

export interface SendProgress {
  done: number;
  total: number;
  delivered: number;
  undelivered: number;
  retried: number;
}

export interface SenderOptions {
  /** Base URL of the receiver; callbacks go to `<url>/callbacks/recording` and `<url>/callbacks/screenshot`. */
  url: string;
  sends: readonly ScheduledSend[];
  /** Nonces and back-off jitter come from here, so a seeded run signs reproducibly. */
  random: Random;
  concurrency?: number;
  sign?: SignPlacement;
  secret?: string;
  maxAttempts?: number;
  timeoutMs?: number;
  /** First back-off delay; doubled at each retry, with jitter, capped by maxBackoffMs. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Wait for each send's `at` (default); false sends as fast as concurrency allows. */
  followSchedule?: boolean;
  onProgress?: (progress: SendProgress) => void;
  /** What the platform does before it sends a callback: store the file an upload reports (./storage.ts). */
  beforeSend?: (send: ScheduledSend) => Promise<void>;
  /** Signing clock, epoch ms. */
  now?: () => number;
}

export interface SendResult extends ScheduledSend {
  /** Acknowledged with a 2xx. Only delivered bodies count in the expectation. */
  delivered: boolean;
  attempts: number;
  /** Status of the last attempt, or null when it got no response. */
  status: number | null;
  /** Why the last attempt failed, when it did. */
  error: string | null;
}

export interface SendSummary {
  callbacks: number;
  delivered: number;
  undelivered: number;
  /** HTTP requests attempted, retries included. */
  requests: number;
  status2xx: number;
  status4xx: number;
  status5xx: number;
  /** Attempts without a response: connection refused or reset, time-outs. */
  networkErrors: number;
  timeouts: number;
  /** Attempts beyond the first. */
  retried: number;
  latencyP50Ms: number | null;
  latencyP99Ms: number | null;
  durationMs: number;
}

export interface SendReport {
  results: SendResult[];
  summary: SendSummary;
}

export const SENDER_DEFAULTS = {
  concurrency: 8,
  maxAttempts: 5,
  timeoutMs: 5000,
  backoffMs: 200,
  maxBackoffMs: 3000,
} as const;

const HEX = '0123456789abcdef';

/**
 * The receiver's base URL as a user types it, checked: a missing scheme (`localhost:3000`) or a scheme other
 * than http/https is one sentence saying what to write instead.
 */
function receiverUrl(base: string, option = '--url'): URL {
  const text = base.trim();
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    throw new Error(
      `${option} needs a scheme: write http://${text.replace(/^\/+/, '')} (or https:// for a TLS endpoint)`,
    );
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`${option} ${JSON.stringify(base)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`${option} must be an http or https URL, got ${JSON.stringify(base)}`);
  }
  return url;
}

/** The route of a service under a base URL, keeping any path prefix (an API Gateway stage, say). */
export function callbackUrl(base: string, service: Service): URL {
  const url = receiverUrl(base);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/callbacks/${service}`;
  return url;
}

/** Where the signature travels: RC-* headers or nonce/timestamp/signature query parameters. */
export function signRequest(
  url: URL,
  headers: Record<string, string>,
  placement: SignPlacement,
  secret: string,
  nonce: string,
  timestampSeconds: number,
): void {
  if (placement === 'none') return;
  const timestamp = String(timestampSeconds);
  const signature = computeSignature(secret, nonce, timestamp);
  if (placement === 'header') {
    headers['RC-Nonce'] = nonce;
    headers['RC-Timestamp'] = timestamp;
    headers['RC-Signature'] = signature;
  } else {
    url.searchParams.set('nonce', nonce);
    url.searchParams.set('timestamp', timestamp);
    url.searchParams.set('signature', signature);
  }
}

/** Nearest-rank percentile of an ascending list. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

const isRetryableStatus = (status: number) => status >= 500 || status === 408 || status === 429;

/** A short reason for a failed attempt. Duck-typed: fetch's errors may come from another realm. */
function describeError(err: unknown): { message: string; timeout: boolean } {
  const e = (err ?? {}) as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return { message: 'time-out', timeout: true };
  return { message: e.cause?.code ?? errorSentence(e.cause ?? err, { bare: true }), timeout: false };
}

/** TLS errors of a client speaking https to a server that answers in plain http. */
const PLAIN_HTTP_ANSWER =
  /^(ERR_SSL_WRONG_VERSION_NUMBER|ERR_SSL_PACKET_LENGTH_TOO_LONG|EPROTO)$|wrong version number/i;

/** Why nothing usable answered at `url`, in one sentence. */
export function unreachable(url: URL, err: unknown): Error {
  const { message } = describeError(err);
  if (url.protocol === 'https:' && PLAIN_HTTP_ANSWER.test(message)) {
    const http = new URL(url.href);
    http.protocol = 'http:';
    return new Error(
      `${url.origin} answers, but not over TLS (${message}): it looks like a plain http server; try ${http.origin}`,
    );
  }
  return new Error(`nothing answers at ${url.origin} (${message}); is the receiver running?`);
}

/** Retry-After in seconds, when the receiver sent one. */
function retryAfterMs(res: Response): number | null {
  const value = res.headers.get('retry-after');
  if (!value || !/^\d+$/.test(value.trim())) return null;
  return Number(value) * 1000;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Fails fast, with one clear sentence, when nothing answers at the base URL. */
export async function checkReachable(base: string, timeoutMs = 5000): Promise<void> {
  const url = receiverUrl(base);
  try {
    const res = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
  } catch (err) {
    throw unreachable(url, err);
  }
}

export async function sendAll(opts: SenderOptions): Promise<SendReport> {
  const concurrency = Math.max(1, Math.trunc(opts.concurrency ?? SENDER_DEFAULTS.concurrency));
  const maxAttempts = Math.max(1, Math.trunc(opts.maxAttempts ?? SENDER_DEFAULTS.maxAttempts));
  const timeoutMs = opts.timeoutMs ?? SENDER_DEFAULTS.timeoutMs;
  const backoffMs = opts.backoffMs ?? SENDER_DEFAULTS.backoffMs;
  const maxBackoffMs = opts.maxBackoffMs ?? SENDER_DEFAULTS.maxBackoffMs;
  const placement = opts.sign ?? 'header';
  const secret = opts.secret ?? '';
  const now = opts.now ?? Date.now;
  const followSchedule = opts.followSchedule ?? true;
  const { random, sends } = opts;
  const routes: Record<Service, URL> = {
    recording: callbackUrl(opts.url, 'recording'),
    screenshot: callbackUrl(opts.url, 'screenshot'),
  };

  const summary: SendSummary = {
    callbacks: sends.length,
    delivered: 0,
    undelivered: 0,
    requests: 0,
    status2xx: 0,
    status4xx: 0,
    status5xx: 0,
    networkErrors: 0,
    timeouts: 0,
    retried: 0,
    latencyP50Ms: null,
    latencyP99Ms: null,
    durationMs: 0,
  };
  const latencies: number[] = [];
  const results: SendResult[] = new Array(sends.length);
  const started = performance.now();
  let done = 0;

  const attempt = async (
    send: ScheduledSend,
  ): Promise<{ status: number | null; error: string | null; retryAfter: number | null }> => {
    const url = new URL(routes[send.service]);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    signRequest(url, headers, placement, secret, random.string(16, HEX), Math.floor(now() / 1000));
    const t0 = performance.now();
    summary.requests += 1;
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(send.body),
        // Never follow a redirect: callbacks go to the URL given and nowhere else.
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
      await res.arrayBuffer();
      latencies.push(performance.now() - t0);
      if (res.status >= 200 && res.status < 300) summary.status2xx += 1;
      else if (res.status >= 400 && res.status < 500) summary.status4xx += 1;
      else if (res.status >= 500) summary.status5xx += 1;
      return { status: res.status, error: res.ok ? null : `HTTP ${res.status}`, retryAfter: retryAfterMs(res) };
    } catch (err) {
      const { message, timeout } = describeError(err);
      summary.networkErrors += 1;
      if (timeout) summary.timeouts += 1;
      return { status: null, error: message, retryAfter: null };
    }
  };

  const deliver = async (index: number): Promise<void> => {
    const send = sends[index]!;
    if (followSchedule) {
      const wait = started + send.at - performance.now();
      if (wait > 0) await sleep(wait);
    }
    await opts.beforeSend?.(send);
    let outcome: Awaited<ReturnType<typeof attempt>> = { status: null, error: null, retryAfter: null };
    let attempts = 0;
    while (attempts < maxAttempts) {
      if (attempts > 0) {
        summary.retried += 1;
        const backoff = Math.min(maxBackoffMs, backoffMs * 2 ** (attempts - 1));
        const jittered = backoff / 2 + random.next() * (backoff / 2);
        await sleep(Math.min(maxBackoffMs, Math.max(jittered, outcome.retryAfter ?? 0)));
      }
      attempts += 1;
      outcome = await attempt(send);
      const retryable = outcome.status === null || isRetryableStatus(outcome.status);
      if (outcome.error === null || !retryable) break;
    }
    const delivered = outcome.error === null;
    if (delivered) summary.delivered += 1;
    else summary.undelivered += 1;
    results[index] = { ...send, delivered, attempts, status: outcome.status, error: outcome.error };
    done += 1;
    opts.onProgress?.({
      done,
      total: sends.length,
      delivered: summary.delivered,
      undelivered: summary.undelivered,
      retried: summary.retried,
    });
  };

  await inParallel(sends, concurrency, (_send, index) => deliver(index));

  latencies.sort((a, b) => a - b);
  const round = (v: number | null) => (v === null ? null : Math.round(v * 10) / 10);
  summary.latencyP50Ms = round(percentile(latencies, 50));
  summary.latencyP99Ms = round(percentile(latencies, 99));
  summary.durationMs = Math.round(performance.now() - started);
  return { results, summary };
}
