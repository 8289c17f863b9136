// Bundles each Lambda handler in functions/ into its own minified ESM artifact under dist/<name>/,
// zips it for `serverless package`, and prints each artifact's size.
import { build } from 'esbuild';
import { readdirSync, mkdirSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { join, basename } from 'node:path';
import { zipFiles } from './zip.mjs';
import { buildConsole } from './build-console.mjs';

export const esbuildOptions = {
  bundle: true,
  minify: true,
  platform: 'node',
  target: 'node24',
  format: 'esm',
  sourcemap: false,
  legalComments: 'none',
  // The SDK v3 is bundled (not taken from the runtime) so that the version that was tested is the one
  // that runs. A few of its packages are CommonJS; this banner gives them a `require` in an ES module.
  banner: { js: "import{createRequire as __cr}from'node:module';const require=__cr(import.meta.url);" },
  mainFields: ['module', 'main'],
};

const root = new URL('..', import.meta.url).pathname;
const functionsDir = join(root, 'functions');
const distDir = join(root, 'dist');

export async function buildAll({ quiet = false } = {}) {
  rmSync(distDir, { recursive: true, force: true });
  const entries = readdirSync(functionsDir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
  const results = [];
  for (const file of entries) {
    const name = basename(file, '.ts');
    const outDir = join(distDir, name);
    mkdirSync(outDir, { recursive: true });
    const outfile = join(outDir, 'index.mjs');
    await build({ ...esbuildOptions, entryPoints: [join(functionsDir, file)], outfile });
    const zipPath = join(distDir, `${name}.zip`);
    writeFileSync(zipPath, zipFiles([{ name: 'index.mjs', data: readFileSync(outfile) }]));
    results.push({ name, bytes: statSync(outfile).size, zipBytes: statSync(zipPath).size, outfile, zipPath });
  }
  if (!quiet) {
    console.log('artifact            bundle bytes   zip bytes');
    for (const r of results) {
      console.log(`${r.name.padEnd(18)} ${String(r.bytes).padStart(13)} ${String(r.zipBytes).padStart(11)}`);
    }
  }
  // The console's static files, which `callbacks dev` and `callbacks console` serve.
  await buildConsole({ quiet });
  return results;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildAll();
}
