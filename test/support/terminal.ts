// A command as a user runs it on a real terminal, colours on: a pseudo-terminal (util-linux `script`) in front of
// `callbacks <args>`, and what the terminal showed.
import { spawn, spawnSync } from 'node:child_process';
import { childEnv, cliBin, nodeBin } from './cli-process.ts';

/** Whether `script` is there to give a command a pseudo-terminal. */
export const hasScript = spawnSync('script', ['--version']).status === 0;

const shellQuote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * `callbacks <args>` in `cwd` on a pseudo-terminal, colours on; what the terminal showed. `typed` is sent as
 * keystrokes once `ready` shows up in the output (a Ctrl-C to stop `dev`); `columns` sets the terminal's width.
 */
export function onTerminal(
  args: string[],
  cwd: string,
  opts: { ready?: string; typed?: string; columns?: number } = {},
): Promise<string> {
  const command = [nodeBin, cliBin, ...args].map(shellQuote).join(' ');
  const sized = opts.columns === undefined ? command : `stty cols ${opts.columns} rows 50; ${command}`;
  const child = spawn('script', ['-q', '-e', '-c', sized, '/dev/null'], {
    cwd,
    env: childEnv({ TERM: 'xterm-256color', SHELL: '/bin/sh' }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let shown = '';
  let typed = false;
  child.stdout.on('data', (chunk: Buffer) => {
    shown += chunk.toString('utf8');
    if (opts.ready && opts.typed && !typed && shown.includes(opts.ready)) {
      typed = true;
      child.stdin.write(opts.typed);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => {
    shown += chunk.toString('utf8');
  });
  if (!opts.typed) child.stdin.end();
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', () => resolve(shown.replace(/\r\n/g, '\n')));
  });
}
