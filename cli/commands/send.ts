// `callbacks send <body.json>`: one callback body, signed and posted as the platform sends it (the signature
// rule of lib/sign.ts, through the sender emulator's own signing), and the receiver's answer printed. Nobody
// has to compute SHA-1 by hand for curl.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Option, type Command } from 'commander';
import {
  callbackUrl,
  SIGN_PLACEMENTS,
  signRequest,
  unreachable,
  type SignPlacement,
} from '../../lib/emulator/sender.ts';
import { parseSecrets } from '../../lib/ingest/secrets.ts';
import { DEFAULT_SECRETS } from '../../lib/local/demo-secrets.ts';
import { type Service, SERVICES } from '../../lib/domain/services.ts';
import { CliError, durationOption, printJson } from '../inspect.ts';
import { printable } from '../format.ts';
import { readLocalStack } from '../../lib/local/stack-file.ts';

interface SendOptions {
  service?: Service;
  url?: string;
  appKey?: string;
  secret?: string;
  sign: SignPlacement;
  timeout: number;
  json?: boolean;
}

export function register(program: Command): void {
  program
    .command('send <body>')
    .description('sign one callback body (a JSON file, or - for stdin) as the platform does, post it, print the answer')
    .addOption(
      new Option(
        '--service <service>',
        'the route: recording or screenshot (default: from recordId or imageId)',
      ).choices(SERVICES),
    )
    .option('--url <base>', 'receiver base URL (default: the local stack running in this folder)')
    .option(
      '--app-key <appKey>',
      "the appKey whose secret signs, also sent in the RC-App-Key header (default: the body's, no header)",
    )
    .option('--secret <secret>', 'the secret to sign with (default: CALLBACK_SECRETS, else the local demo key)')
    .addOption(new Option('--sign <where>', 'where the signature travels').choices(SIGN_PLACEMENTS).default('header'))
    .addOption(
      new Option('--timeout <duration>', 'give up after this long (10s, 2m, 500ms; a bare number is seconds)')
        .argParser(durationOption)
        .default(10_000, '10s'),
    )
    .option('--json', 'the answer as JSON: url, status, body')
    .action(async (file: string, opts: SendOptions) => {
      await send(file, opts);
    });
}

async function readBody(file: string): Promise<string> {
  try {
    if (file !== '-') return await readFile(file, 'utf8');
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

function serviceOf(body: Record<string, unknown>, file: string): Service {
  if (typeof body.recordId === 'string') return 'recording';
  if (typeof body.imageId === 'string') return 'screenshot';
  throw new CliError(`${file} has neither recordId nor imageId: say which route with --service`);
}

/** The secret for `appKey`: --secret, CALLBACK_SECRETS, or the demo key of a local stack that uses it. */
function secretFor(appKey: string, opts: SendOptions, usingLocalDemo: boolean): string {
  if (opts.secret !== undefined) return opts.secret;
  const configured = process.env.CALLBACK_SECRETS?.trim()
    ? parseSecrets(process.env.CALLBACK_SECRETS, 'CALLBACK_SECRETS')
    : usingLocalDemo
      ? parseSecrets(JSON.stringify(DEFAULT_SECRETS), 'the demo secrets')
      : new Map<string, readonly string[]>();
  const secrets = configured.get(appKey);
  if (!secrets?.length) {
    throw new CliError(`no secret for appKey "${appKey}": pass --secret, or set CALLBACK_SECRETS`);
  }
  // The newest secret of a rotation is listed last.
  return secrets[secrets.length - 1]!;
}

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

  const local = readLocalStack();
  if (opts.url === undefined && !local) {
    throw new CliError('no --url given and no local stack is running in this folder (start one with "npm start")');
  }
  const base = opts.url ?? local!.url;
  const url = callbackUrl(base, service);
  const toLocal = local !== null && new URL(local.url).origin === url.origin;
  const appKey = opts.appKey ?? (typeof fields.appKey === 'string' ? fields.appKey : '');
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.sign !== 'none') {
    if (!appKey) throw new CliError(`${file} has no appKey: pass --app-key to choose the secret`);
    const usingLocalDemo = toLocal && (local!.secretsSource ?? 'default') === 'default';
    const secret = secretFor(appKey, opts, usingLocalDemo);
    signRequest(url, headers, opts.sign, secret, randomBytes(8).toString('hex'), Math.floor(Date.now() / 1000));
  }
  if (opts.appKey !== undefined) headers['RC-App-Key'] = opts.appKey;

  let status: number;
  let answer: string;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers,
      // The file's text as it is: the receiver enqueues exactly what it was sent.
      body: text,
      redirect: 'manual',
      signal: AbortSignal.timeout(opts.timeout),
    });
    status = res.status;
    answer = await res.text();
  } catch (err) {
    throw new CliError(unreachable(url, err).message);
  }
  const shownUrl = `${url.origin}${url.pathname}`;
  if (opts.json) {
    let parsed: unknown = answer;
    try {
      parsed = JSON.parse(answer);
    } catch {
      // Not JSON: kept as text.
    }
    printJson({ url: shownUrl, status, body: parsed });
  } else {
    process.stdout.write(`POST ${printable(shownUrl)} -> ${status} ${printable(answer.trim())}\n`);
  }
  if (status < 200 || status >= 300) process.exitCode = 1;
}
