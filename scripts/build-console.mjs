// Bundles the console (console/src/*.ts, plain TypeScript and DOM) with esbuild into static files under
// dist/console/: app.js, style.css, index.html, and build.json, which lists the build's inputs and their
// hash so that the CLI can tell whether the build is out of date. No CDN, nothing fetched at run time.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
export const consoleSourceDir = join(root, 'console');
export const consoleOutDir = join(root, 'dist', 'console');
/** Copied as they are. */
const STATIC_FILES = ['index.html', 'style.css'];

/** The hash of the given files (paths relative to the repository), or null when one is missing. */
export function hashInputs(inputs) {
  const hash = createHash('sha256');
  for (const path of [...inputs].sort()) {
    const full = join(root, path);
    if (!existsSync(full)) return null;
    hash.update(path).update('\0').update(readFileSync(full)).update('\0');
  }
  return hash.digest('hex');
}

/** True when dist/console holds a build of the current sources. */
export function consoleBuildIsCurrent(outDir = consoleOutDir) {
  const manifest = join(outDir, 'build.json');
  if (!existsSync(manifest)) return false;
  try {
    const { inputs, hash } = JSON.parse(readFileSync(manifest, 'utf8'));
    return Array.isArray(inputs) && hashInputs(inputs) === hash;
  } catch {
    return false;
  }
}

function moveIntoPlace(tmp, outDir) {
  try {
    renameSync(tmp, outDir);
  } catch (err) {
    // Another build got there first: its output is as good as this one.
    rmSync(tmp, { recursive: true, force: true });
    if (!existsSync(join(outDir, 'build.json'))) throw err;
  }
}

export async function buildConsole({ outDir = consoleOutDir, quiet = false } = {}) {
  // Loaded here, not above: checking whether the build is current needs no esbuild (a devDependency).
  let build;
  try {
    ({ build } = await import('esbuild'));
  } catch {
    throw new Error('the console is not built and esbuild is not installed: run "npm ci" then "npm run build"');
  }
  // Built beside the target and renamed into place: a reader never sees half a build, and two builds at
  // once (parallel test files) both end with a whole one.
  const tmp = `${outDir}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(tmp, { recursive: true });
  const result = await build({
    entryPoints: [join(consoleSourceDir, 'src', 'main.ts')],
    outfile: join(tmp, 'app.js'),
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    sourcemap: false,
    legalComments: 'none',
    metafile: true,
    // The metafile names its inputs relative to this folder, as build.json keeps them.
    absWorkingDir: root,
    logLevel: 'error',
  });
  for (const file of STATIC_FILES) writeFileSync(join(tmp, file), readFileSync(join(consoleSourceDir, file)));
  const inputs = [
    ...Object.keys(result.metafile.inputs),
    ...STATIC_FILES.map((f) => relative(root, join(consoleSourceDir, f))),
  ];
  const files = ['app.js', ...STATIC_FILES].map((name) => ({ name, bytes: statSync(join(tmp, name)).size }));
  writeFileSync(join(tmp, 'build.json'), `${JSON.stringify({ inputs, hash: hashInputs(inputs), files }, null, 2)}\n`);
  // Another build of the same sources finished meanwhile: keep it, as a server may be reading it.
  if (consoleBuildIsCurrent(outDir)) {
    rmSync(tmp, { recursive: true, force: true });
  } else {
    rmSync(outDir, { recursive: true, force: true });
    moveIntoPlace(tmp, outDir);
  }
  if (!quiet) {
    console.log('console file        bytes');
    for (const f of files) console.log(`${f.name.padEnd(16)} ${String(f.bytes).padStart(8)}`);
  }
  return { outDir, files };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildConsole();
}
