// What a run of the `callbacks` command touches outside itself: its output and input streams, its
// environment, its folder, the signals that ask it to stop, its exit code. bin/callbacks.js gives a run the
// process's own (processIo); a test gives it strings and an environment of its own, and runs the command in
// its own process, several at once if it likes. The commands reach theirs through cliIo(): a run's calls
// all happen inside it (AsyncLocalStorage), so two runs at once never see each other's output or settings.
import { AsyncLocalStorage } from 'node:async_hooks';
import { resolve } from 'node:path';

/** A stream the command writes to: a terminal (isTTY), a pipe, or a test's collector. */
export type OutputStream = NodeJS.WritableStream & { isTTY?: boolean };

export interface CliIo {
  stdout: OutputStream;
  stderr: OutputStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: Readonly<Record<string, string | undefined>>;
  /** The folder relative paths and the local stack's file are found from. */
  cwd: string;
  /** Calls `listener` on each request to stop (SIGINT, SIGTERM); returns what removes it. */
  onStop(listener: () => void): () => void;
  /** Ends the whole run at once, without finishing the work in progress (a second Ctrl-C). */
  exit(code: number): void;
}

/** The process's own streams, environment, folder and signals: the command as a user runs it. */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    onStop(listener) {
      process.on('SIGINT', listener);
      process.on('SIGTERM', listener);
      return () => {
        process.off('SIGINT', listener);
        process.off('SIGTERM', listener);
      };
    },
    exit: (code) => process.exit(code),
  };
}

interface CliRun {
  io: CliIo;
  exitCode: number;
}

const runs = new AsyncLocalStorage<CliRun>();
let outsideRuns: CliRun | undefined;

function currentRun(): CliRun {
  const run = runs.getStore();
  if (run) return run;
  // A command module's helper called outside run() (a unit test of a formatter): the process's own.
  outsideRuns ??= { io: processIo(), exitCode: 0 };
  return outsideRuns;
}

/** The streams, environment and folder of the run in progress. */
export function cliIo(): CliIo {
  return currentRun().io;
}

/** The run ends with `code` (after the command's work is done), as setting process.exitCode would. */
export function setExitCode(code: number): void {
  currentRun().exitCode = code;
}

/** The exit code set so far in this run (0 when none was). */
export function exitCode(): number {
  return currentRun().exitCode;
}

/** `path` as typed on the command line, resolved from the run's folder. */
export function pathFromCwd(path: string): string {
  return resolve(cliIo().cwd, path);
}

/** Runs `fn` as one run of the command with `io`; resolves to the exit code `fn` and its callees set. */
export async function withCliIo(io: CliIo, fn: () => Promise<void>): Promise<number> {
  const run: CliRun = { io, exitCode: 0 };
  await runs.run(run, fn);
  return run.exitCode;
}
