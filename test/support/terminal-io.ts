// A run of the command whose output streams say they are a terminal (isTTY, a width), collected as text: what a
// command draws only on a terminal (a progress line, a progress bar) is then read as it was written.
import { Readable, Writable } from 'node:stream';
import type { CliIo } from '../../cli/io.ts';
import { childEnv } from './cli-process.ts';

/** A stream collecting what is written, a terminal of `columns` columns or not. */
function collector(isTTY: boolean, columns: number) {
  let text = '';
  const stream = Object.assign(
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString();
        done();
      },
    }),
    { isTTY, columns },
  );
  return { stream, text: () => text };
}

/** The streams of a run whose stderr is a terminal (and stdout too, with `stdoutTTY`). */
export function terminalIo(o: { cwd: string; env?: Record<string, string>; stdoutTTY?: boolean; columns?: number }) {
  const stdout = collector(o.stdoutTTY ?? false, o.columns ?? 200);
  const stderr = collector(true, o.columns ?? 200);
  const io: CliIo = {
    stdout: stdout.stream,
    stderr: stderr.stream,
    stdin: Readable.from([]),
    env: childEnv(o.env),
    cwd: o.cwd,
    onStop: () => () => {},
    exit: () => {},
  };
  return { io, stdout: stdout.text, stderr: stderr.text };
}
