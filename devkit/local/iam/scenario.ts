// One small end-to-end run that makes every function of the local stack call what it calls in service: a
// signed callback through the ingest (its secrets read through the extension, its replay claim written and, for
// a resend, read back, its SendMessage), the event source mapping's receive and delete, the worker's reads,
// writes, task event and archive, and the read API's reads by key, by index and of a task's callbacks, the sweeper's
// reads, writes and event of a stalled task, and the verifier's check of an uploaded file in the stack's storage
// and its event. The stack must run as `SCENARIO_STACK` says. The role mutation test (test/iam-roles.test.ts) and
// `callbacks doctor` run it against a stack with IAM enforced.
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { EventQueueReader } from '../../../lib/aws/sqs/event-queue.ts';
import { computeSignature } from '../../../lib/platform/signing.ts';
import { DEFAULT_SECRETS } from '../demo-secrets.ts';
import { LOCAL_CREDENTIALS } from '../deployed-settings.ts';
import type { LocalStack } from '../stack.ts';
import { archivedLines } from '../stack-archive.ts';
import type { LocalStackOptions } from '../stack-options.ts';
import type { Denial } from './enforce.ts';
import { errorSentence } from '../../../lib/text.ts';

const [APP_KEY, [SECRET]] = Object.entries(DEFAULT_SECRETS)[0]! as [string, readonly string[]];

/** A run that did not reach every outcome, with the calls refused meanwhile. */
class ScenarioError extends Error {
  override name = 'ScenarioError';
  readonly denials: Denial[];
  constructor(message: string, denials: Denial[]) {
    super(denials.length > 0 ? `${message}; refused: ${denials.map((d) => d.message).join(' | ')}` : message);
    this.denials = denials;
  }
}

export interface IamScenario {
  /** Resolves when every outcome is there and no call was refused; rejects with a ScenarioError otherwise. */
  run(): Promise<void>;
  close(): void;
}

export interface IamScenarioOptions {
  /** How long each outcome is waited for at most: a run that fails waits that long once (default 4,000 ms). */
  waitMs?: number;
  /** How often an outcome is looked for while it is awaited (default 50 ms). */
  pollMs?: number;
  /**
   * Ends the run as soon as a call is refused, rather than when an outcome is missing (a refused call fails
   * the run in any case): a mutation test of the roles learns what it needs without waiting for `waitMs`.
   */
  stopAtFirstDenial?: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * What the scenario needs of its stack, beside its folder: kept in memory, new tasks armed at once, sweeps only
 * when the scenario asks, and a first sweep that reads back an hour (its stalled task fell due an hour ago), not
 * a whole day.
 */
export const SCENARIO_STACK = {
  port: 0,
  memory: true,
  quiet: true,
  retryDelaySeconds: 1,
  settleAfter: '1ms',
  scheduleEveryMs: 0,
  sweepLookBack: '2h',
} as const satisfies LocalStackOptions;

/** The scenario against `stack` (which must run with the demo secrets). */
export function iamScenario(stack: LocalStack, options: IamScenarioOptions = {}): IamScenario {
  const { waitMs = 4000, pollMs = 50, stopAtFirstDenial = false } = options;
  if (!SECRET) throw new Error('the demo secrets have no secret');
  const local = { region: stack.info.region, credentials: LOCAL_CREDENTIALS };
  const sqs = new SQSClient({ ...local, endpoint: stack.info.sqsEndpoint });
  const events = new EventQueueReader(sqs, stack.info.eventsQueueUrl!);
  // The archive's bucket in fauxqs's S3, read as the stack's own (not under a role).
  const s3 = new S3Client({ ...local, endpoint: stack.info.sqsEndpoint, forcePathStyle: true });
  /** Whether the worker's archive holds a line of the task `id` (a template without an archive holds none to find). */
  const archived = async (id: string) => {
    const archive = stack.info.archive;
    return !archive || (await archivedLines(s3, archive.bucket, archive.prefix)).some((l) => l.task_id === id);
  };
  let runs = 0;
  /** The platform time of the last run's recovered upload: a failure no later belongs to that run's incident. */
  let lastRecoveredAt = 0;

  const run = async () => {
    const first = stack.iam.denials.length;
    const denied = () => stack.iam.denials.slice(first);
    const within = async (what: string, attempt: () => Promise<boolean>, budget = waitMs) => {
      const deadline = Date.now() + budget;
      while (!(await attempt())) {
        if (stopAtFirstDenial && denied().length > 0) throw new Error(`calls were refused before ${what}`);
        if (Date.now() > deadline) throw new Error(`not within ${budget} ms: ${what}`);
        await sleep(pollMs);
      }
    };
    const n = ++runs;
    const id = `rec-iam-${Date.now().toString(36)}-${n}`;
    const room = `room-${id}`;
    const body = {
      timestamp: Date.now(),
      type: 1,
      appKey: APP_KEY,
      recordId: id,
      roomId: room,
      sessionId: `s-${id}`,
      userId: '',
      mode: 3,
      code: 200,
      errorMessage: 'success',
      config: {},
      output: { fileName: `s-${id}_${room}_1763798400000.mp4` },
    };
    const ts = String(Math.floor(Date.now() / 1000));
    // Each callback its own nonce: the same signature with another body is a replay.
    const post = async (nonce: string, callback: object) => {
      const query = `nonce=${nonce}&timestamp=${ts}&signature=${computeSignature(SECRET, nonce, ts)}`;
      const res = await fetch(`${stack.url}/callbacks/recording?${query}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(callback),
      });
      if (res.status !== 200) throw new Error(`the ingest answered ${res.status}: ${await res.text()}`);
    };
    const read = async (path: string) => {
      const res = await fetch(`${stack.url}${path}`);
      return res.status === 200 ? ((await res.json()) as Record<string, unknown>) : null;
    };
    try {
      await post(`start-${id}`, body);
      // The same request again, as a sender resends it: the ingest finds its replay claim taken and reads it back.
      await post(`start-${id}`, body);
      // A task's end with no start before it: the worker reads the header it cannot guess.
      await post(`end-${id}`, { ...body, type: 3, recordId: `${id}-end` });
      await within('the read API finds the tasks, by id and by id and appKey', async () => {
        const [a, b] = await Promise.all([read(`/tasks/${id}`), read(`/tasks/${id}-end?appKey=${APP_KEY}`)]);
        return a !== null && b !== null;
      });
      // A slice of a task the worker knows: its count is an update of the header (a start's is its put).
      const { config: _none, ...sliceBase } = body;
      await post(`slice-${id}`, {
        ...sliceBase,
        type: 2,
        timestamp: body.timestamp + 60_000,
        output: { fileName: `s-${id}_${room}_1763798400000.mp4`, fileSize: 1000 },
      });
      await within('the task counts its slice', async () => {
        const page = await read(`/tasks/${id}`);
        const task = page?.task as { files?: unknown[] } | undefined;
        return task?.files?.length === 1;
      });
      await within('the task is listed by its room (an index)', async () => {
        const page = await read(`/tasks?room=${room}`);
        return ((page?.tasks ?? []) as Array<{ id: string }>).some((t) => t.id === id);
      });
      await within("the task's callbacks are read back", async () => {
        const page = await read(`/tasks/${id}/events`);
        return ((page?.events ?? []) as unknown[]).length > 0;
      });
      await within('a task event was published', async () => (await events.poll()).some((e) => e.body.task?.id === id));
      // The worker's PutRecordBatch to the archive's stream: the stand-in wrote the task's lines to the bucket.
      await within("the task's callbacks were archived", () => archived(id));
      // The file reported uploaded, never put in the storage: the verifier reads it, finds it missing (its role's
      // HeadObject on the stack's bucket), stores its check and publishes file.missing.
      await post(`upload-${id}`, {
        ...sliceBase,
        type: 4,
        timestamp: body.timestamp + 90_000,
        output: {
          fileName: `s-${id}_${room}_1763798400000.mp4`,
          fileUrl: `https://storage.example.com/recordings/s-${id}_${room}_1763798400000.mp4`,
        },
      });
      await within('the verifier found the uploaded file missing', async () =>
        (await events.poll()).some((e) => e.body.task?.id === id && e.body.type === 'file.missing'),
      );
      // An upload of another file fails: the verifier keeps the failure, and its sweep opens a storage incident
      // (reading the failures and the files' states, probing the bucket), then resolves it once an upload succeeds.
      const failedFile = `s-${id}_${room}_1763798460000.mp4`;
      const upload = { ...sliceBase, type: 4, output: { fileName: failedFile, fileUrl: '' } };
      const failedAt = Math.max(body.timestamp + 100_000, lastRecoveredAt + 1_000);
      lastRecoveredAt = failedAt + 10_000;
      await post(`failed-${id}`, { ...upload, timestamp: failedAt, code: 500, errorMessage: 'failed' });
      const incident = (type: string) => async () => {
        const results = (await stack.runSchedules()) as Array<{ failed?: number } | null>;
        if (results.some((r) => r === null || (r.failed ?? 0) > 0)) return false;
        const seen = await events.poll();
        return seen.some((e) => e.body.type === type && (e.body.incident as { appKey?: string })?.appKey === APP_KEY);
      };
      // Two queues and a sweep between the callback and the event: three times the wait of one outcome.
      await within('the verifier opened a storage incident', incident('storage.incident_opened'), 3 * waitMs);
      await post(`recovered-${id}`, {
        ...upload,
        timestamp: lastRecoveredAt,
        output: { fileName: failedFile, fileUrl: `https://storage.example.com/recordings/${failedFile}` },
      });
      await within('the verifier resolved the storage incident', incident('storage.incident_resolved'), 3 * waitMs);
      // A task silent for 7 hours (its interval unknown, 6 hours make it stalled): the sweeper finds it and
      // publishes it (the stack arms new tasks at once: settleAfter 1ms; it sweeps when asked: scheduleEveryMs 0).
      const stalled = `${id}-stall`;
      await post(`stall-${id}`, { ...body, recordId: stalled, timestamp: Date.now() - 7 * 3_600_000 });
      await within('the sweeper published the stalled task', async () => {
        const results = (await stack.runSchedules()) as Array<{ failed?: number } | null>;
        if (results.some((r) => r === null || (r.failed ?? 0) > 0)) return false;
        return (await events.poll()).some((e) => e.body.task?.id === stalled && e.body.type === 'task.stalled');
      });
      if (denied().length > 0) throw new Error('calls were refused');
      // Every record handled: the next run starts from an empty queue.
      await within('the queue is drained', async () => stack.poller.busy() === 0);
    } catch (err) {
      throw new ScenarioError(
        errorSentence(err, { bare: true, allLines: true, max: Number.POSITIVE_INFINITY }),
        denied(),
      );
    }
  };
  return {
    run,
    close: () => {
      sqs.destroy();
      s3.destroy();
    },
  };
}
