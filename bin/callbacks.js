#!/usr/bin/env node
// The `callbacks` command. Its sources are TypeScript, run directly by Node 24's type stripping
// (the project pins Node 24 through its `node` devDependency, which npm puts first on the PATH).
// An older Node cannot even load them: say so in one sentence before trying, instead of a stack trace.
const [major] = process.versions.node.split('.').map(Number);
if (major < 24) {
  process.stderr.write(
    `callbacks needs Node 24 or later and this is Node ${process.versions.node}: run it as "npx callbacks ..." ` +
      "or through the npm scripts, which use the project's pinned Node 24.\n",
  );
  process.exit(1);
}
// Everything else is cli/main.ts's run, with this process's streams, environment, folder and signals.
const { run } = await import('../cli/main.ts');
const { processIo } = await import('../cli/io.ts');
process.exitCode = await run(process.argv.slice(2), processIo());
