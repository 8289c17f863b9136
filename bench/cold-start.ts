// Part 2, cold start. Every Lambda artifact is bundled as `npm run build` bundles it (the same entries,
// esbuild options and zip writer), and so are three baselines from bench/baselines/: the least an HTTP ->
// SendMessage handler, an SQS -> PutItem handler and an HTTP -> GetItem handler can be. Each bundle is
// then imported by a fresh Node process (the pinned Node 24), which reports the time of
// `await import(bundle)`; the bundles take turns in every repetition so that they share the machine's noise.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type BuildOptions } from 'esbuild';
import { ratios, summarize, type Summary } from './stats.ts';

export interface ColdStartSizes {
  /** Fresh processes per bundle. */
  repeats: number;
}

export const coldStartSizes = {
  full: { repeats: 15 },
  quick: { repeats: 3 },
} satisfies Record<string, ColdStartSizes>;

export interface BundleResult {
  name: string;
  role: 'function' | 'baseline';
  /** The baseline a function is compared with (the one doing its kind of I/O). */
  baseline: string | null;
  bytes: number;
  zipBytes: number;
  /** `await import(bundle)` in a fresh process, milliseconds. */
  importMs: Summary;
  /** From the process's time origin to the end of the import: Node's own start-up plus the import. */
  processMs: Summary;
  /** Function over its baseline; per repetition for the times. Null for the baselines themselves. */
  ratios: { bytes: number; zipBytes: number; importMs: Summary; processMs: Summary } | null;
}

export interface ColdStartResult {
  repeats: number;
  nodeVersion: string;
  bundles: BundleResult[];
}

const root = fileURLToPath(new URL('..', import.meta.url));

/** The baselines, and which function each one stands for. */
const baselines = [
  { name: 'baseline-send-message', source: 'bench/baselines/send-message.ts', standsFor: 'ingest' },
  { name: 'baseline-put-item', source: 'bench/baselines/put-item.ts', standsFor: 'worker' },
  { name: 'baseline-get-item', source: 'bench/baselines/get-item.ts', standsFor: 'api' },
] as const;

interface BuildScript {
  esbuildOptions: BuildOptions;
}
interface ZipScript {
  zipFiles(files: { name: string; data: Buffer }[]): Buffer;
}

/** The build scripts are plain .mjs without declarations: imported by URL, typed here. */
async function loadBuildScripts(): Promise<BuildScript & ZipScript> {
  const buildUrl = new URL('../scripts/build.mjs', import.meta.url).href;
  const zipUrl = new URL('../scripts/zip.mjs', import.meta.url).href;
  const [buildScript, zipScript] = (await Promise.all([import(buildUrl), import(zipUrl)])) as [BuildScript, ZipScript];
  return { esbuildOptions: buildScript.esbuildOptions, zipFiles: zipScript.zipFiles };
}

/** The pinned Node 24 (node_modules/.bin/node), else the Node running the bench. */
export function pinnedNode(): string {
  const local = join(root, 'node_modules', '.bin', 'node');
  return existsSync(local) ? local : process.execPath;
}

interface Built {
  name: string;
  role: 'function' | 'baseline';
  baseline: string | null;
  file: string;
  bytes: number;
  zipBytes: number;
}

/**
 * Bundles into `outDir` rather than dist/: `npm run build` (and the packaging test) delete and rewrite
 * dist/, and a bench must neither read a half-written dist/ nor disturb it. Same entries, same options.
 */
async function buildBundles(outDir: string): Promise<Built[]> {
  const { esbuildOptions, zipFiles } = await loadBuildScripts();
  const functionsDir = join(root, 'functions');
  const entries = [
    ...readdirSync(functionsDir)
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .sort()
      .map((f) => ({ name: basename(f, '.ts'), source: join(functionsDir, f), role: 'function' as const })),
    ...baselines.map((b) => ({ name: b.name, source: join(root, b.source), role: 'baseline' as const })),
  ];
  const built: Built[] = [];
  for (const entry of entries) {
    const dir = join(outDir, entry.name);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'index.mjs');
    await build({ ...esbuildOptions, entryPoints: [entry.source], outfile: file, logLevel: 'silent' });
    const zipPath = join(outDir, `${entry.name}.zip`);
    writeFileSync(zipPath, zipFiles([{ name: 'index.mjs', data: readFileSync(file) }]));
    const baseline =
      entry.role === 'function' ? (baselines.find((b) => b.standsFor === entry.name)?.name ?? null) : null;
    built.push({
      name: entry.name,
      role: entry.role,
      baseline,
      file,
      bytes: statSync(file).size,
      zipBytes: statSync(zipPath).size,
    });
  }
  return built;
}

/** Runs in the fresh process: the import alone, timed, on a line of its own. */
const childScript = `
const started = performance.now();
await import(process.argv[1]);
const ended = performance.now();
process.stdout.write('\\n@@cold-start ' + JSON.stringify({ importMs: ended - started, processMs: ended }) + '\\n');
process.exit(0);
`;

/** The environment the functions have on Lambda (serverless.yml); nothing is contacted at import. */
const childEnv: NodeJS.ProcessEnv = {
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '256',
  QUEUE_URL: 'http://127.0.0.1:9/000000000000/bench',
  SIGNATURE_MODE: 'enforce',
  SIGNATURE_TOLERANCE_S: '300',
  MAX_BODY_BYTES: '65536',
  CALLBACK_SECRETS_PARAM: '/bench/callback-secrets',
  SECRETS_REFRESH_S: '300',
  TASKS_TABLE: 'bench-tasks',
  RAW_EVENT_TTL_DAYS: '90',
  LOG_LEVEL: 'info',
};

function importOnce(node: string, bundle: string, cwd: string): Promise<{ importMs: number; processMs: number }> {
  return new Promise((resolve, reject) => {
    execFile(
      node,
      ['--input-type=module', '-e', childScript, pathToFileURL(bundle).href],
      { cwd, env: childEnv, timeout: 30_000, maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        if (error) {
          reject(new Error(`importing ${bundle} failed: ${error.message}${stderr ? `\n${stderr.slice(0, 500)}` : ''}`));
          return;
        }
        const line = stdout
          .split('\n')
          .reverse()
          .find((l) => l.startsWith('@@cold-start '));
        if (!line) {
          reject(new Error(`importing ${bundle} printed no timing`));
          return;
        }
        resolve(JSON.parse(line.slice('@@cold-start '.length)) as { importMs: number; processMs: number });
      },
    );
  });
}

export async function benchColdStart(
  sizes: ColdStartSizes,
  workDir: string,
  progress: (line: string) => void = () => {},
): Promise<ColdStartResult> {
  const bundles = await buildBundles(join(workDir, 'bundles'));
  progress(`cold start: ${bundles.length} bundles built`);
  const node = pinnedNode();
  const nodeVersion = await new Promise<string>((resolve, reject) =>
    execFile(node, ['--version'], { env: childEnv, timeout: 10_000 }, (err, out) =>
      err ? reject(err) : resolve(out.trim()),
    ),
  );
  // One warm-up import each: the first read of a file from disk is not what a Lambda cold start measures.
  for (const b of bundles) await importOnce(node, b.file, workDir);
  const times = new Map(bundles.map((b) => [b.name, { importMs: [] as number[], processMs: [] as number[] }]));
  for (let rep = 0; rep < sizes.repeats; rep++) {
    for (let k = 0; k < bundles.length; k++) {
      const b = bundles[(rep + k) % bundles.length]!;
      const t = await importOnce(node, b.file, workDir);
      times.get(b.name)!.importMs.push(t.importMs);
      times.get(b.name)!.processMs.push(t.processMs);
    }
  }
  progress(`cold start: ${sizes.repeats} fresh processes per bundle`);

  const results: BundleResult[] = bundles.map((b) => {
    const own = times.get(b.name)!;
    const base = b.baseline ? bundles.find((x) => x.name === b.baseline) : undefined;
    const baseTimes = base ? times.get(base.name)! : undefined;
    return {
      name: b.name,
      role: b.role,
      baseline: b.baseline,
      bytes: b.bytes,
      zipBytes: b.zipBytes,
      importMs: summarize(own.importMs),
      processMs: summarize(own.processMs),
      ratios:
        base && baseTimes
          ? {
              bytes: b.bytes / base.bytes,
              zipBytes: b.zipBytes / base.zipBytes,
              importMs: summarize(ratios(own.importMs, baseTimes.importMs)),
              processMs: summarize(ratios(own.processMs, baseTimes.processMs)),
            }
          : null,
    };
  });
  return { repeats: sizes.repeats, nodeVersion, bundles: results };
}
