// The console's static files for `callbacks dev` and `callbacks console`: dist/console/, built with
// esbuild when it is missing or older than its sources (a fresh checkout, an edited console/src), so that
// nothing needs a build step first. The check hashes the inputs the last build listed: a few files.
import { buildConsole, consoleBuildIsCurrent, consoleOutDir } from '../scripts/build-console.mjs';

export async function ensureConsoleBuilt(): Promise<string> {
  if (!consoleBuildIsCurrent()) await buildConsole({ quiet: true });
  return consoleOutDir;
}
