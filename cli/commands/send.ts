// `callbacks send <body.json>`: one callback body, signed and posted as the platform sends it (the signature
// rule of lib/sign.ts, through the sender emulator's own signing), and the receiver's answer printed. Nobody
// has to compute SHA-1 by hand for curl. `callbacks send --lifecycle recording|screenshot`: a whole task's
// callbacks, from the sender emulator's generator, one after the other, each answer printed.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { SingleBar } from 'cli-progress';
import { Option, type Command } from 'commander';
import { DEFAULT_COMPRESS, generateRun } from '../../devkit/emulator/lifecycles.ts';
import {
  callbackUrl,
  SIGN_PLACEMENTS,
  signRequest,
  unreachable,
  type SignPlacement,
} from '../../devkit/emulator/sender.ts';
import { DEFAULT_SECRETS } from '../../devkit/local/demo-secrets.ts';
import { type Service, SERVICES } from '../../lib/platform/services.ts';
import { CliError, printJson } from '../inspect.ts';
import { durationOption, rate } from '../option-parsers.ts';
import { EmulatedStorage, planStoredFiles, STORED_SIZE_DIVISOR } from '../../devkit/emulator/storage.ts';
import { type FileStorageOptions, localFileStorage, storageFaults } from '../file-storage.ts';
import { callbackTypeName, printable } from '../format.ts';
import { readLocalStack, type LocalStackInfo } from '../../devkit/local/stack-file.ts';
import { isLoopbackHost } from '../../devkit/local/http-gateway.ts';
import { errorSentence } from '../../lib/text.ts';
import { cliIo, pathFromCwd, setExitCode } from '../io.ts';
import { type TaskShapeOptions, taskShapeOf, withTaskShape } from '../task-shape-options.ts';
import {
  type SecretsSource,
  type SenderSecretsOptions,
  secretToSign,
  senderSecrets,
  withSenderSecrets,
} from '../secrets.ts';

export interface SendOptions extends SenderSecretsOptions {
  service?: Service;
  url?: string;
  appKey?: string;
  sign: SignPlacement;
  timeout: number;
  json?: boolean;
}

export interface LifecycleOptions extends SendOptions, TaskShapeOptions, FileStorageOptions {
  lifecycle: Service;
  failUploads?: boolean;
  seed?: string;
}

/** Beyond this many callbacks a lifecycle prints only the answers not accepted (and a progress bar on a terminal). */
const ANSWERS_PRINTED = 200;

/** One callback posted, and the receiver's answer. */
export interface Answer {
  url: string;
  status: number;
  /** The answer's JSON, or its text when it is not JSON. */
  body: unknown;
}

export function register(program: Command): void {
  withTaskShape(withSenderSecrets(program.command('send [body]')))
    .description(
      'sign one callback body (a JSON file, or - for stdin) as the platform does, post it, print the answer; or ' +
        "with --lifecycle a whole task's callbacks",
    )
    .addOption(
      new Option(
        '--service <service>',
        'the route: recording or screenshot (default: from recordId or imageId)',
      ).choices(SERVICES),
    )
    .addOption(
      new Option(
        '--lifecycle <service>',
        'instead of a body: the callbacks of one whole task (start, slices or images, uploads, end)',
      ).choices(SERVICES),
    )
    .option('--fail-uploads', 'with --lifecycle: the uploads meet a storage outage and are given up')
    .option('--seed <seed>', 'with --lifecycle: seed of the task generated (default: random)')
    .option(
      '--storage-faults <kinds>',
      "with --lifecycle: files reported uploaded that the local stack's storage does not hold as reported " +
        '(missing,empty,truncated,forbidden)',
      storageFaults,
    )
    .option('--storage-fault-rate <rate>', 'with --storage-faults: share of the files faulted (default 1)', rate)
    .option('--url <base>', 'receiver base URL (default: the local stack running in this folder)')
    .option(
      '--app-key <appKey>',
      "the appKey whose secret signs, also sent in the RC-App-Key header (default: the body's, no header; " +
        'with --lifecycle demo-app)',
    )
    .addOption(new Option('--sign <where>', 'where the signature travels').choices(SIGN_PLACEMENTS).default('header'))
    .addOption(
      new Option('--timeout <duration>', 'give up after this long (10s, 2m, 500ms; a bare number is seconds)')
        .argParser(durationOption)
        .default(10_000, '10s'),
    )
    .option('--json', 'the answer as JSON: url, status, body (with --lifecycle, an array of them)')
    .action(async (file: string | undefined, opts: SendOptions & Partial<LifecycleOptions>) => {
      if (opts.lifecycle !== undefined) {
        if (file !== undefined) throw new CliError('give a body file or --lifecycle, not both');
        if (opts.service !== undefined) throw new CliError('--lifecycle names the service: leave out --service');
        await sendLifecycle({ ...opts, lifecycle: opts.lifecycle });
        return;
      }
      if (opts.failUploads || opts.seed !== undefined || opts.storageFaults)
        throw new CliError('--fail-uploads, --seed and --storage-faults need --lifecycle');
      if ([opts.duration, opts.images, opts.outageAt, opts.outageFor].some((o) => o !== undefined))
        throw new CliError(
          '--duration, --images, --outage-at and --outage-for shape a whole task: they need --lifecycle',
        );
      if (file === undefined) throw new CliError('give a body file (or - for stdin), or --lifecycle');
      await send(file, opts);
    });
}

async function readBody(file: string): Promise<string> {
  try {
    if (file !== '-') return await readFile(pathFromCwd(file), 'utf8');
    const chunks: Buffer[] = [];
    for await (const chunk of cliIo().stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? errorSentence(err)}`);
  }
}

function serviceOf(body: Record<string, unknown>, file: string): Service {
  if (typeof body.recordId === 'string') return 'recording';
  if (typeof body.imageId === 'string') return 'screenshot';
  throw new CliError(`${file} has neither recordId nor imageId: say which route with --service`);
}

/** Where callbacks go: --url, or the local stack of `cwd`. */
export function receiver(opts: Pick<SendOptions, 'url'>, cwd?: string): Receiver {
  const local = readLocalStack(cwd ?? cliIo().cwd);
  if (opts.url === undefined && !local) {
    throw new CliError('no --url given and no local stack is running in this folder (start one with "npm start")');
  }
  return { base: opts.url ?? local!.url, local };
}

/** Where callbacks go, and the local stack of this folder, if one runs. */
export interface Receiver {
  base: string;
  local: LocalStackInfo | null;
}

/**
 * The local stack `to` posts to, when its base is that stack's (`localhost` and `127.0.0.1` alike): its secrets are
 * the ones to sign with.
 */
export function localReceiver(to: Receiver): LocalStackInfo | null {
  if (to.local === null) return null;
  const [stack, base] = [new URL(to.local.url), new URL(to.base)];
  const sameHost =
    stack.hostname === base.hostname || (isLoopbackHost(stack.hostname) && isLoopbackHost(base.hostname));
  return sameHost && stack.protocol === base.protocol && stack.port === base.port ? to.local : null;
}

/** What a post needs besides the body: where the signature goes, the secrets, how long to wait. */
export interface PostOptions {
  sign: SignPlacement;
  appKey?: string | undefined;
  timeout: number;
  secrets: SecretsSource;
}

/** Signs (unless --sign none) and posts one body's text as it is; the receiver's answer, and its text. */
export async function postCallback(
  service: Service,
  text: string,
  appKey: string,
  opts: PostOptions,
  to: Receiver,
): Promise<{ answer: Answer; text: string }> {
  const url = callbackUrl(to.base, service);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.sign !== 'none') {
    const secret = await secretToSign(opts.secrets, appKey);
    signRequest(url, headers, opts.sign, secret, randomBytes(8).toString('hex'), Math.floor(Date.now() / 1000));
  }
  if (opts.appKey !== undefined) headers['RC-App-Key'] = opts.appKey;

  let status: number;
  let answer: string;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers,
      // The text as it is: the receiver enqueues exactly what it was sent.
      body: text,
      redirect: 'manual',
      signal: AbortSignal.timeout(opts.timeout),
    });
    status = res.status;
    answer = await res.text();
  } catch (err) {
    throw new CliError(unreachable(url, err).message);
  }
  let body: unknown = answer;
  try {
    body = JSON.parse(answer);
  } catch {
    // Not JSON: kept as text.
  }
  return { answer: { url: `${url.origin}${url.pathname}`, status, body }, text: answer.trim() };
}

const succeeded = (a: Answer) => a.status >= 200 && a.status < 300;

/** Times a lifecycle's callback answered 503 is sent again, as the platform's sender resends. */
const LIFECYCLE_RETRIES_ON_503 = 3;

async function send(file: string, opts: SendOptions): Promise<void> {
  const text = await readBody(file);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new CliError(`${file} is not valid JSON`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new CliError(`${file} must hold one JSON object, a callback body`);
  }
  const fields = body as Record<string, unknown>;
  const service = opts.service ?? serviceOf(fields, file);
  const to = receiver(opts);
  const appKey = opts.appKey ?? (typeof fields.appKey === 'string' ? fields.appKey : '');
  if (opts.sign !== 'none' && !appKey) throw new CliError(`${file} has no appKey: pass --app-key to choose the secret`);
  const secrets = senderSecrets(opts, localReceiver(to));
  const { answer, text: said } = await postCallback(service, text, appKey, { ...opts, secrets }, to);
  if (opts.json) printJson(answer);
  else cliIo().stdout.write(`POST ${printable(answer.url)} -> ${answer.status} ${printable(said)}\n`);
  if (!succeeded(answer)) setExitCode(1);
}

/** One callback of a lifecycle sent: which, and the answer. */
export interface LifecycleAnswer extends Answer {
  type: number;
  taskId: string;
}

/**
 * The callbacks of one task as the sender emulator generates them (devkit/emulator/lifecycles.ts), in the
 * platform's order, each posted once its predecessor is answered. `write` gets each answer's line.
 */
export async function postLifecycle(
  opts: LifecycleOptions,
  write: (line: string, answer: LifecycleAnswer) => void = () => {},
  cwd?: string,
  env: Readonly<Record<string, string | undefined>> = cliIo().env,
  onStart?: (callbacks: number) => void,
): Promise<LifecycleAnswer[]> {
  if (opts.images !== undefined && opts.lifecycle !== 'screenshot')
    throw new CliError('--images is the number of images of a screenshot task: --lifecycle screenshot');
  const to = receiver(opts, cwd);
  const appKey = opts.appKey ?? Object.keys(DEFAULT_SECRETS)[0]!;
  // A task's few files: a fault asked for is given to each of them unless a rate says otherwise.
  const storage = localFileStorage(localReceiver(to), { storageFaultRate: 1, ...opts });
  const seed = opts.seed ?? randomBytes(4).toString('hex');
  const run = generateRun({
    seed,
    recordings: opts.lifecycle === 'recording' ? 1 : 0,
    screenshots: opts.lifecycle === 'screenshot' ? 1 : 0,
    appKey,
    compress: DEFAULT_COMPRESS,
    outage: opts.failUploads ? 1 : 0,
    giveUp: opts.failUploads ? 1 : 0,
    ...taskShapeOf(opts, opts.failUploads === true),
    ...(storage ? { sizeDivisor: STORED_SIZE_DIVISOR } : {}),
  });
  onStart?.(run.sends.length);
  const files = storage
    ? new EmulatedStorage(
        storage.s3,
        storage.settings,
        planStoredFiles(run.sends, { faults: storage.faults, rate: storage.rate, seed, settings: storage.settings }),
      )
    : null;
  const answers: LifecycleAnswer[] = [];
  const secrets = senderSecrets(opts, localReceiver(to), env);
  for (const s of run.sends) {
    await files?.beforeSend(s);
    const post = () => postCallback(s.service, JSON.stringify(s.body), appKey, { ...opts, secrets }, to);
    let { answer, text } = await post();
    // A 503 asks the sender to retry (the queue or the replay claim unreachable for a moment), as the platform does.
    for (let retry = 1; retry <= LIFECYCLE_RETRIES_ON_503 && answer.status === 503; retry++)
      ({ answer, text } = await post());
    const type = s.body.type as number;
    const posted = { ...answer, type, taskId: s.taskId };
    answers.push(posted);
    write(
      `${callbackTypeName(type).padEnd(8)} ${printable(s.taskId)}  POST ${printable(answer.url)} -> ` +
        `${answer.status} ${printable(text)}`,
      posted,
    );
  }
  storage?.s3.destroy();
  return answers;
}

async function sendLifecycle(opts: LifecycleOptions): Promise<void> {
  // A big task: only the answers not accepted are printed, and how far it got on a terminal.
  let many = false;
  let bar: SingleBar | null = null;
  const answers = await (async () => {
    try {
      return await postLifecycle(
        opts,
        (line, answer) => {
          bar?.increment();
          if (!opts.json && (!many || !succeeded(answer))) cliIo().stdout.write(`${line}\n`);
        },
        undefined,
        cliIo().env,
        (callbacks) => {
          many = callbacks > ANSWERS_PRINTED;
          if (many && !opts.json && cliIo().stderr.isTTY) {
            bar = new SingleBar({
              format: 'sending [{bar}] {value}/{total} callbacks',
              hideCursor: true,
              stream: cliIo().stderr as NodeJS.WriteStream,
            });
            bar.start(callbacks, 0);
          }
        },
      );
    } finally {
      (bar as SingleBar | null)?.stop();
    }
  })();
  const refused = answers.filter((a) => !succeeded(a)).length;
  if (opts.json) printJson(answers);
  else {
    cliIo().stdout.write(
      `${answers.length} callbacks of ${opts.lifecycle} task ${printable(answers[0]?.taskId ?? '-')}` +
        `${refused ? `, ${refused} not accepted` : ', all accepted'}` +
        `${many ? ` (beyond ${ANSWERS_PRINTED} callbacks, only those not accepted are printed)` : ''}.\n`,
    );
  }
  if (refused) setExitCode(1);
}
