// The `callbacks` command as a user runs it: a child process on the pinned Node, in a given folder, with
// none of the caller's settings (test/support/caller-env.ts). `startDev` runs `callbacks dev` until stopped,
// as `npm start` would.
// `runCliHere` runs the very same command (cli/main.ts's run) in this process, with an environment, a
// folder and streams of its own: what bin/callbacks.js does, without the half second a process takes to
// start. The child process stays for what only a process has: bin's wiring, exit codes, signals.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import type { CliIo } from '../../cli/io.ts';
import { run as runCallbacks } from '../../cli/main.ts';
import { readLocalStack, type LocalStackInfo } from '../../devkit/local/stack-file.ts';
import { computeSignature } from '../../lib/platform/signing.ts';
import { withoutCallerSettings } from './caller-env.ts';

const root = new URL('../..', import.meta.url).pathname;
export const nodeBin = join(root, 'node_modules/.bin/node');
export const cliBin = join(root, 'bin/callbacks.js');

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment of a child: this one without the caller's settings (test/support/caller-env.ts), plus `extra`. */
export function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { ...withoutCallerSettings(process.env), AWS_EC2_METADATA_DISABLED: 'true', ...extra };
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

type Output = { stdout: string; stderr: string };

/**
 * What a command printed so far, and waits on it that are checked at each write (never on a clock): `until`
 * resolves once the output satisfies `what`, and rejects if the command ends first, with what it said.
 */
class Printed {
  private text: Output = { stdout: '', stderr: '' };
  private readonly waiting = new Set<() => void>();
  private readonly ended: Promise<unknown>;
  private readonly what: string;
  constructor(ended: Promise<unknown>, what: string) {
    this.ended = ended;
    this.what = what;
  }
  add(stream: keyof Output, chunk: string | Buffer): void {
    this.text[stream] += chunk.toString();
    for (const check of [...this.waiting]) check();
  }
  output = (): Output => ({ ...this.text });
  until = (what: (output: Output) => boolean, label: string): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!what(this.text)) return;
        this.waiting.delete(check);
        resolve();
      };
      this.waiting.add(check);
      check();
      void this.ended.then(() => {
        if (!this.waiting.delete(check)) return;
        const said = this.text.stderr.trim() || this.text.stdout.trim();
        reject(new Error(`${this.what} ended before ${label}: ${said}`));
      });
    });
}

/** A run of `callbacks <args>` in this process: its result, what it printed so far, and Ctrl-C. */
export interface CliHere {
  done: Promise<Run>;
  output(): Output;
  /** What SIGINT would do to the command run by a user. */
  stop(): void;
  /** Resolves as soon as what it printed satisfies `what` (checked at each write), rejects if it ends first. */
  until(what: (output: Output) => boolean, label: string): Promise<void>;
}

/** A stream that passes what is written to it to `printed` (not a terminal, as a pipe). */
function into(printed: Printed, stream: keyof Output): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      printed.add(stream, chunk);
      done();
    },
  });
}

/** Starts `callbacks <args>` in this process, as runCli does in a child (same environment rules). */
export function startCliHere(
  args: string[],
  opts: { cwd: string; env?: Record<string, string>; input?: string },
): CliHere {
  let ended!: () => void;
  const printed = new Printed(new Promise<void>((resolve) => (ended = resolve)), `callbacks ${args.join(' ')}`);
  const stopListeners = new Set<() => void>();
  const io: CliIo = {
    stdout: into(printed, 'stdout'),
    stderr: into(printed, 'stderr'),
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
  const done = runCallbacks(args, io).then((code) => {
    ended();
    return { code, ...printed.output() };
  });
  return {
    done,
    output: printed.output,
    stop: () => {
      for (const listener of [...stopListeners]) listener();
    },
    until: printed.until,
  };
}

/** Runs `callbacks <args>` in this process and collects its output: runCli without the child. */
export function runCliHere(
  args: string[],
  opts: { cwd: string; env?: Record<string, string>; input?: string },
): Promise<Run> {
  return startCliHere(args, opts).done;
}

/** `callbacks dev` running, in a child process or in this one. */
export interface RunningDev {
  info: LocalStackInfo;
  /** What it printed so far. */
  output(): Output;
  /** Resolves once what it printed satisfies `what` (checked at each write). */
  until(what: (output: Output) => boolean, label: string): Promise<void>;
  /** SIGTERM (or what it does), then waits for the end; resolves to the exit code. */
  stop(): Promise<number | null>;
}

export interface DevProcess extends RunningDev {
  child: ChildProcess;
}

const ready = ({ stdout }: Output) => stdout.includes('Local stack ready');

/** Starts `callbacks dev --port 0 <args>` in this process; resolves once it is ready and its stack file names it. */
export async function startDevHere(
  args: string[],
  opts: { cwd: string; env?: Record<string, string> },
): Promise<RunningDev> {
  const dev = startCliHere(['dev', '--port', '0', ...args], opts);
  await dev.until(ready, 'the stack was ready');
  const info = readLocalStack(opts.cwd);
  if (!info) throw new Error(`callbacks dev left no stack file in ${opts.cwd}`);
  let stopped: Promise<number> | undefined;
  return {
    info,
    output: dev.output,
    until: dev.until,
    stop() {
      if (!stopped) {
        dev.stop();
        stopped = dev.done.then((run) => run.code);
      }
      return stopped;
    },
  };
}

/** Starts `callbacks dev --port 0 <args>` in a child process in `cwd`; resolves once its stack file names it. */
export async function startDev(
  args: string[],
  opts: { cwd: string; env?: Record<string, string> },
): Promise<DevProcess> {
  const child = spawn(nodeBin, [cliBin, 'dev', '--port', '0', ...args], {
    cwd: opts.cwd,
    env: childEnv(opts.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exit = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const printed = new Printed(exit, 'callbacks dev');
  child.stdout!.on('data', (d: Buffer) => printed.add('stdout', d));
  child.stderr!.on('data', (d: Buffer) => printed.add('stderr', d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  try {
    // The banner is printed after the stack file is written.
    await printed.until(ready, 'the stack was ready');
  } finally {
    clearTimeout(timer);
  }
  const info = readLocalStack(opts.cwd);
  if (!info || info.pid !== child.pid) throw new Error(`callbacks dev left no stack file of its own in ${opts.cwd}`);
  return {
    child,
    info,
    output: printed.output,
    until: printed.until,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exit;
    },
  };
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
