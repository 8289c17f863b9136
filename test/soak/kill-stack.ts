// `callbacks dev` as the kill part runs it: a child process on a data folder of its own and on one fixed port (the
// sender keeps its URL across restarts), its JSON log lines appended to a file per run of the folder, killed with
// SIGKILL (nothing finishes, nothing is cleaned up: the stack file stays behind, naming a process that is gone) or
// stopped with SIGTERM as Ctrl-C stops it. Everything else is seen from outside, as an operator sees it: the stack
// file, `/health`, the queues' depths.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { openLocal, type Target } from '../../devkit/local/target.ts';
import { readLocalStack, type LocalStackInfo } from '../../devkit/local/stack-file.ts';
import { childEnv, cliBin } from '../support/cli-process.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A port free now on 127.0.0.1, for every run of the stack: the sender's URL does not change across restarts. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface StackRun {
  child: ChildProcess;
  info: LocalStackInfo;
  /** The stack's queues and table, through its emulators' endpoints (new ones at each start). */
  target: Target;
  logFile: string;
  /** SIGKILL, then waits until the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM (Ctrl-C: the requests and batches in hand finish), then waits until the process is gone. */
  stop(): Promise<number | null>;
}

export interface StackStart {
  /** The folder the stack runs in: its data in `.data/`, its stack file in `.data/stack.json`. */
  cwd: string;
  port: number;
  /** `callbacks dev` options besides `--port` and `--log-format`. */
  args: string[];
  env: Record<string, string>;
  /** A name for this run of the stack: its log file is `<cwd>/<name>.log`. */
  name: string;
  /** How long the start may take (on 2 busy cores, with a large data folder to open). */
  timeoutMs?: number;
}

/**
 * Starts `callbacks dev` under this process's Node (the pinned one, under npm scripts); resolves once its stack file
 * names it and `/health` answers 200.
 */
export async function startStack(opts: StackStart): Promise<StackRun> {
  const logFile = join(opts.cwd, `${opts.name}.log`);
  const fd = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(
      process.execPath,
      [cliBin, 'dev', '--port', String(opts.port), '--log-format', 'json', ...opts.args],
      { cwd: opts.cwd, env: childEnv(opts.env), stdio: ['ignore', fd, fd] },
    );
  } finally {
    closeSync(fd);
  }
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      resolve(code);
    }),
  );
  const info = await ready(child, opts.cwd, Date.now() + (opts.timeoutMs ?? 180_000), () => exitCode, logFile);
  const target = openLocal(info);
  const gone = async () => {
    await exited;
    await target.close();
  };
  return {
    child,
    info,
    target,
    logFile,
    async kill() {
      child.kill('SIGKILL');
      await gone();
    },
    async stop() {
      child.kill('SIGTERM');
      await gone();
      return exitCode ?? null;
    },
  };
}

/** The stack file of `child` once it names it and `/health` answers 200 (the stack is ready). */
async function ready(
  child: ChildProcess,
  cwd: string,
  deadline: number,
  exitCode: () => number | null | undefined,
  logFile: string,
): Promise<LocalStackInfo> {
  for (;;) {
    if (exitCode() !== undefined)
      throw new Error(`callbacks dev ended (${exitCode()}) before it was ready; see ${logFile}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`callbacks dev was not ready in time; see ${logFile}`);
    }
    const info = readLocalStack(cwd);
    if (info && info.pid === child.pid) {
      const health = await fetch(`${info.url}/health`).catch(() => null);
      if (health?.status === 200) return info;
    }
    await sleep(100);
  }
}

/**
 * Resolves as soon as the log file gains a line holding `needle` (read as it grows, every few milliseconds), or with
 * false after `timeoutMs`: the moment a worker has applied a record and its batch is not answered yet.
 */
export async function nextLogLine(logFile: string, needle: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let offset = statSync(logFile).size;
  const fd = openSync(logFile, 'r');
  const buffer = Buffer.alloc(1 << 16);
  let carry = '';
  try {
    while (Date.now() < deadline) {
      const n = readSync(fd, buffer, 0, buffer.length, offset);
      if (n === 0) {
        await sleep(2);
        continue;
      }
      offset += n;
      const text = carry + buffer.toString('utf8', 0, n);
      if (text.includes(needle)) return true;
      carry = text.slice(-needle.length);
    }
    return false;
  } finally {
    closeSync(fd);
  }
}

/**
 * Resolves true once the stack's queue has held nothing (visible, in flight or delayed) for `settleMs`: every
 * callback acknowledged is applied or dead-lettered, and no batch is in hand (its messages stay in flight until the
 * batch is answered). False at `deadline`.
 */
export async function idle(target: Target, deadline: number, settleMs = 3000): Promise<boolean> {
  let quietSince: number | null = null;
  while (Date.now() < deadline) {
    const depth = await target.queue.depth().catch(() => null);
    if (depth !== null && depth.visible + depth.inFlight + depth.delayed === 0) {
      quietSince ??= Date.now();
      if (Date.now() - quietSince >= settleMs) return true;
    } else quietSince = null;
    await sleep(250);
  }
  return false;
}
