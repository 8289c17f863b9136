// The `callbacks` command as a user runs it: a child process on the pinned Node, in a given folder, with
// none of the machine's AWS settings. `startDev` runs `callbacks dev` until stopped, as `npm start` would.
// `runCliHere` runs the very same command (cli/main.ts's run) in this process, with an environment, a
// folder and streams of its own: what bin/callbacks.js does, without the half second a process takes to
// start. The child process stays for what only a process has: bin's wiring, exit codes, signals.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import type { CliIo } from '../../cli/io.ts';
import { run as runCallbacks } from '../../cli/main.ts';
import { readLocalStack, type LocalStackInfo } from '../../lib/local/stack-file.ts';
import { computeSignature } from '../../lib/platform/signing.ts';

const root = new URL('../..', import.meta.url).pathname;
export const nodeBin = join(root, 'node_modules/.bin/node');
export const cliBin = join(root, 'bin/callbacks.js');

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment of a child: this one without AWS, table, queue or colour settings, plus `extra`. */
export function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue;
    if (/^(AWS_|TASKS_TABLE|QUEUE_URL|DLQ_URL|NO_COLOR|FORCE_COLOR|CALLBACK_SECRETS|SIGNATURE_|ALLOWED_)/.test(k))
      continue;
    env[k] = v;
  }
  return { ...env, AWS_EC2_METADATA_DISABLED: 'true', ...extra };
}

/** Runs `callbacks <args>` in `cwd` and collects its output. */
export function runCli(
  args: string[],
  opts: { cwd: string; env?: Record<string, string>; node?: string; input?: string; timeoutMs?: number },
): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      opts.node ?? nodeBin,
      [cliBin, ...args],
      { cwd: opts.cwd, env: childEnv(opts.env), timeout: opts.timeoutMs ?? 60_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

/** A run of `callbacks <args>` in this process: its result, what it printed so far, and Ctrl-C. */
export interface CliHere {
  done: Promise<Run>;
  output(): { stdout: string; stderr: string };
  /** What SIGINT would do to the command run by a user. */
  stop(): void;
}

/** A stream that keeps what is written to it (not a terminal, as a pipe). */
function collector(): { stream: Writable; text(): string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

/** Starts `callbacks <args>` in this process, as runCli does in a child (same environment rules). */
export function startCliHere(args: string[], opts: { cwd: string; env?: Record<string, string>; input?: string }) {
  const stdout = collector();
  const stderr = collector();
  const stopListeners = new Set<() => void>();
  const io: CliIo = {
    stdout: stdout.stream,
    stderr: stderr.stream,
    stdin: Readable.from(opts.input === undefined ? [] : [Buffer.from(opts.input)]),
    env: childEnv(opts.env),
    cwd: opts.cwd,
    onStop(listener) {
      stopListeners.add(listener);
      return () => stopListeners.delete(listener);
    },
    exit(code) {
      throw new Error(`callbacks asked to end the process with ${code}: only a child process can be ended`);
    },
  };
  const output = () => ({ stdout: stdout.text(), stderr: stderr.text() });
  const done = runCallbacks(args, io).then((code) => ({ code, ...output() }));
  return {
    done,
    output,
    stop: () => {
      for (const listener of [...stopListeners]) listener();
    },
  } satisfies CliHere;
}

/** Runs `callbacks <args>` in this process and collects its output: runCli without the child. */
export function runCliHere(
  args: string[],
  opts: { cwd: string; env?: Record<string, string>; input?: string },
): Promise<Run> {
  return startCliHere(args, opts).done;
}

export interface DevProcess {
  child: ChildProcess;
  info: LocalStackInfo;
  /** What the process printed so far. */
  output(): { stdout: string; stderr: string };
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<number | null>;
}

/** Starts `callbacks dev --port 0 <args>` in `cwd` and resolves once its stack file names it. */
export async function startDev(
  args: string[],
  opts: { cwd: string; env?: Record<string, string> },
): Promise<DevProcess> {
  const child = spawn(nodeBin, [cliBin, 'dev', '--port', '0', ...args], {
    cwd: opts.cwd,
    env: childEnv(opts.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  let exited: number | null | undefined;
  const exit = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      exited = code;
      resolve(code);
    }),
  );
  const deadline = Date.now() + 30_000;
  for (;;) {
    const info = readLocalStack(opts.cwd);
    if (info && info.pid === child.pid && stdout.includes('Local stack ready')) {
      return {
        child,
        info,
        output: () => ({ stdout, stderr }),
        async stop() {
          if (exited === undefined) child.kill('SIGTERM');
          return exit;
        },
      };
    }
    if (exited !== undefined) throw new Error(`callbacks dev exited with ${exited}: ${stderr.trim() || stdout.trim()}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`callbacks dev did not start: ${stderr.trim() || stdout.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** POSTs a body to `<url>/callbacks/<service>`, signed in headers with `secret`. */
export async function postSigned(
  url: string,
  service: 'recording' | 'screenshot',
  body: unknown,
  secret = 'demo-secret',
): Promise<{ status: number; json: any }> {
  const nonce = `n${Math.random().toString(36).slice(2)}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const res = await fetch(`${url}/callbacks/${service}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'RC-Nonce': nonce,
      'RC-Timestamp': timestamp,
      'RC-Signature': computeSignature(secret, nonce, timestamp),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}
