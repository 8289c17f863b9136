#!/usr/bin/env node
// The `callbacks` command. Its sources are TypeScript, run directly by Node 24's type stripping. The project pins
// Node 24 through its `node` devDependency, which npm puts first on the PATH of its scripts and of `npx` in the
// project. Started by an older Node (the machine's own: `node bin/callbacks.js`, or `npx` from another folder),
// this entry runs itself again under that pinned Node, so that the command works, and says nothing more, whatever
// Node started it; without it, one sentence says what is missing instead of a stack trace.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const NEEDED = 24;
const majorOf = (version) => Number(version.split('.')[0]);

/** The binary of the project's pinned Node, when it is installed and new enough. */
function pinnedNode() {
  try {
    const require = createRequire(import.meta.url);
    const manifest = require.resolve('node/package.json');
    return majorOf(require(manifest).version) >= NEEDED ? join(dirname(manifest), 'bin', 'node') : null;
  } catch {
    return null;
  }
}

/** Runs this entry again under `node` with the same arguments, streams and signals; ends as it ends. */
function runUnder(node) {
  const child = spawn(node, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  // Passed on: a Ctrl-C reaches both from the terminal, and the command takes a repeat within a second as one.
  for (const signal of signals) process.on(signal, () => child.kill(signal));
  child.on('error', (err) => {
    process.stderr.write(`callbacks: cannot start ${node}: ${err.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal === null) process.exit(code ?? 1);
    for (const s of signals) process.removeAllListeners(s);
    process.kill(process.pid, signal);
  });
}

if (majorOf(process.versions.node) < NEEDED) {
  const node = pinnedNode();
  if (node) runUnder(node);
  else {
    process.stderr.write(
      `callbacks needs Node ${NEEDED} or later and this is Node ${process.versions.node}, and the project's pinned ` +
        'Node is not installed: run "npm ci" in the project, then "npx callbacks ..." or the npm scripts.\n',
    );
    process.exit(1);
  }
} else {
  // Everything else is cli/main.ts's run, with this process's streams, environment, folder and signals.
  const { run } = await import('../cli/main.ts');
  const { processIo } = await import('../cli/io.ts');
  process.exitCode = await run(process.argv.slice(2), processIo());
}
