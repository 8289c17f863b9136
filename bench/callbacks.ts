// The callbacks the bench feeds the system: the fixtures as signed API Gateway events (ingest), and a
// realistic mix from the sender emulator's generator as SQS records (worker). Fixed seeds, so two runs
// measure the same work.
import { Buffer } from 'node:buffer';
import { readFileSync, readdirSync } from 'node:fs';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { generateRun, type ScheduledSend } from '../devkit/emulator/lifecycles.ts';
import { toApiGatewayEvent } from '../devkit/local/apigw-event.ts';
import type { Service } from '../lib/platform/services.ts';
import { FILE_STATE_OK } from '../lib/platform/failures.ts';
import { computeSignature } from '../lib/platform/signing.ts';
import { BENCH_SECRET } from '../devkit/seeds/sqs-record.ts';

export const BENCH_APP_KEY = 'demo-app';

export interface Fixture {
  file: string;
  service: Service;
  raw: string;
}

const fixturesDir = new URL('../test/fixtures/', import.meta.url);

export function loadFixtures(): Fixture[] {
  const files = readdirSync(fixturesDir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  if (files.length === 0) throw new Error('no fixtures found under test/fixtures/');
  return files.map((file) => ({
    file,
    service: file.startsWith('recording') ? 'recording' : 'screenshot',
    // Compact, as the platform sends them.
    raw: JSON.stringify(JSON.parse(readFileSync(new URL(file, fixturesDir), 'utf8'))),
  }));
}

/**
 * The event API Gateway would hand the ingest for a signed POST of `raw` (built by the local stack's own
 * converter, so headers look like a real client's). Signed as the platform's SDKs sign: seconds.
 */
export function signedEvent(
  fixture: Fixture,
  nonce: string,
  nowMs: number,
  secret = BENCH_SECRET,
): APIGatewayProxyEventV2 {
  const body = Buffer.from(fixture.raw, 'utf8');
  const timestamp = String(Math.floor(nowMs / 1000));
  return toApiGatewayEvent({
    method: 'POST',
    url: `/callbacks/${fixture.service}`,
    rawHeaders: [
      'host',
      'callbacks.example.com',
      'content-type',
      'application/json',
      'content-length',
      String(body.length),
      'user-agent',
      'rtc-callback-sender/1.0',
      'RC-Nonce',
      nonce,
      'RC-Timestamp',
      timestamp,
      'RC-Signature',
      computeSignature(secret, nonce, timestamp),
    ],
    body,
    sourceIp: '198.51.100.7',
    now: nowMs,
  });
}

/**
 * Fault settings of the realistic mix: one callback in ten delivered again, callbacks sent less than 5 s
 * of platform time apart shuffled (the platform's own reordering spans seconds), storage outages on one
 * task in twenty, a few failed starts.
 */
export const MIX_FAULTS = {
  duplicates: 0.1,
  reorderPlatformMs: 5000,
  outage: 0.05,
  giveUp: 0.3,
  failedStarts: 0.02,
} as const;

/**
 * The stress case: the same, but shuffled within 200 ms of the compressed schedule, 12 minutes of platform
 * time at 3,600x: starts land after the uploads of their task, and identities are improved late.
 */
export const STRESS_FAULTS = {
  duplicates: 0.1,
  reorderWindowMs: 200,
  outage: 0.05,
  giveUp: 0.3,
  failedStarts: 0.02,
} as const;

export type MixFaults = typeof MIX_FAULTS | typeof STRESS_FAULTS;

/** Recording tasks per screenshot task in the mix. */
const RECORDINGS_PER_SCREENSHOT = 2;

/**
 * Exactly `count` scheduled sends of the emulator's generator: the fewest recording and screenshot task
 * lifecycles (two recordings per screenshot task) that make at least `count` sends, cut at `count` in
 * schedule order, which drops at most part of one task's worth of late callbacks. The expectation of a
 * cut run is still exact: it is computed from what was delivered.
 */
export function generateMix(
  count: number,
  seed: string,
  faults: MixFaults = MIX_FAULTS,
  baseTime = 1_763_798_400_000,
): ScheduledSend[] {
  if (!(count > 0)) throw new Error('a mix needs at least one callback');
  const run = (tasks: number) =>
    generateRun({
      seed,
      recordings: Math.max(1, Math.round((tasks * RECORDINGS_PER_SCREENSHOT) / (RECORDINGS_PER_SCREENSHOT + 1))),
      screenshots: Math.max(1, Math.round(tasks / (RECORDINGS_PER_SCREENSHOT + 1))),
      appKey: BENCH_APP_KEY,
      compress: 3600,
      baseTime,
      ...faults,
    }).sends;
  let high = 3;
  while (run(high).length < count) {
    high *= 2;
    if (high > 1_000_000) throw new Error(`could not generate ${count} callbacks`);
  }
  let low = 1;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (run(mid).length >= count) high = mid;
    else low = mid + 1;
  }
  return run(high).slice(0, count);
}

/** What kind of callback a send is, for the per-kind tables: `recording 4 upload ok`, say. */
export function kindOf(send: Pick<ScheduledSend, 'service' | 'body'>): string {
  const b = send.body;
  const type = Number(b.type);
  const names: Record<number, string> = { 1: 'start', 2: 'slice', 3: 'end', 4: 'upload' };
  let kind = `${send.service} ${type} ${names[type] ?? '?'}`;
  if (type === 4) {
    const output = (b.output ?? {}) as Record<string, unknown>;
    const ok = send.service === 'screenshot' ? output.fileState === FILE_STATE_OK : Number(b.code) === 200;
    kind += ok ? ' ok' : ' failed';
  } else if (Number(b.code) !== 200) {
    kind += ' failed';
  }
  return kind;
}
