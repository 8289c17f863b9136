// The CloudFormation template of the local stage, as `serverless package` writes it: the one source of the
// local stack's functions, environment, limits, roles, queues, topics and routes (devkit/local/stack-template.ts
// reads them). Packaging takes a second or more, so the template is kept under
// `<project>/.data/template/<hash>/`, keyed by a hash of everything that shapes it: serverless.yml, the
// files of infra/, the osls version, the stage and region. A change to any of them packages again.
//
// Packaging runs in a scratch copy of the service with empty placeholder artifacts: the template names the
// zips of `npm run build` but does not depend on their content, so the local stack needs no build.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A CloudFormation template, as far as the local stack reads it. */
export interface Template {
  Parameters?: Record<string, { Default?: unknown }>;
  Conditions?: Record<string, unknown>;
  Resources: Record<string, TemplateResource>;
  Outputs?: Record<string, { Value: unknown }>;
}

export interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
  Condition?: string;
  DependsOn?: string | string[];
}

export const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The stage and region the local template is packaged for. */
export const TEMPLATE_STAGE = 'local';
export const TEMPLATE_REGION = 'us-east-1';
const TEMPLATE_FILE = 'cloudformation-template-update-stack.json';
/** Bumped when the way the template is packaged changes, so that older cached copies are not reused. */
const CACHE_FORMAT = 1;

/** The files whose content shapes the template, relative to the project root, sorted. */
export function templateInputs(root = PROJECT_ROOT): string[] {
  const infra = readdirSync(join(root, 'infra'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.name.endsWith('.test.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
  return ['serverless.yml', ...infra].sort();
}

function oslsVersion(root: string): string {
  const manifest = join(root, 'node_modules/osls/package.json');
  if (!existsSync(manifest))
    throw new Error(
      'the local stack is built from the packaged template, and packaging needs osls (a development dependency): ' +
        'run "npm ci" in the project first',
    );
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

/** Stage parameters the template is packaged with (`--param name=value`), beside serverless.yml's defaults. */
export type StageParams = Readonly<Record<string, string>>;

/** The cache key: a hash of the inputs' names and contents, the packager's version, the stage and region. */
export function templateHash(root = PROJECT_ROOT, params: StageParams = {}): string {
  const hash = createHash('sha256');
  const given = Object.entries(params).sort(([a], [b]) => (a < b ? -1 : 1));
  // Without parameters the key stays what it was, so that caches of the default template are reused.
  const key: unknown[] = [CACHE_FORMAT, oslsVersion(root), TEMPLATE_STAGE, TEMPLATE_REGION];
  hash.update(JSON.stringify(given.length ? [...key, given] : key));
  for (const file of templateInputs(root)) {
    hash.update(`\0${file}\0`);
    hash.update(readFileSync(join(root, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

export const templateCacheDir = (root = PROJECT_ROOT) => join(root, '.data', 'template');

/** The environment of the packaging run: no AWS credentials or configuration, nothing to reach AWS with. */
function offlineEnv(scratch: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(AWS_|SLS_|SERVERLESS_)/.test(key)) env[key] = value;
  }
  return {
    ...env,
    AWS_SHARED_CREDENTIALS_FILE: join(scratch, 'no-credentials'),
    AWS_CONFIG_FILE: join(scratch, 'no-config'),
    AWS_EC2_METADATA_DISABLED: 'true',
  };
}

/** Packages a scratch copy of the service into `<target>/`; throws with osls' own output on failure. */
function packageInto(root: string, target: string, params: StageParams): void {
  const cacheDir = templateCacheDir(root);
  mkdirSync(cacheDir, { recursive: true });
  const scratch = mkdtempSync(join(cacheDir, 'packaging-'));
  try {
    const service = join(scratch, 'service');
    mkdirSync(service);
    cpSync(join(root, 'serverless.yml'), join(service, 'serverless.yml'));
    // The inputs only: a test file beside them is none.
    cpSync(join(root, 'infra'), join(service, 'infra'), {
      recursive: true,
      filter: (source) => !source.endsWith('.test.ts'),
    });
    // The artifacts the functions name: empty zips (an end-of-central-directory record alone).
    const slsText = readFileSync(join(root, 'serverless.yml'), 'utf8');
    for (const [, artifact] of slsText.matchAll(/^\s*artifact:\s*(\S+)\s*$/gm)) {
      const path = join(service, artifact!);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, Buffer.from([0x50, 0x4b, 0x05, 0x06, ...new Array<number>(18).fill(0)]));
    }
    const out = join(scratch, 'out');
    try {
      execFileSync(
        process.execPath,
        [
          join(root, 'node_modules/osls/bin/serverless.js'),
          'package',
          '--stage',
          TEMPLATE_STAGE,
          '--region',
          TEMPLATE_REGION,
          '--package',
          out,
          ...Object.entries(params).flatMap(([name, value]) => ['--param', `${name}=${value}`]),
        ],
        { cwd: service, env: offlineEnv(scratch), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
      );
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      throw new Error(`serverless package failed for the local template:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
    }
    const staged = join(scratch, 'template');
    mkdirSync(staged);
    cpSync(join(out, TEMPLATE_FILE), join(staged, TEMPLATE_FILE));
    try {
      // Whole or not at all: a concurrent packaging of the same inputs may have won, with the same result.
      renameSync(staged, target);
    } catch (err) {
      if (!existsSync(join(target, TEMPLATE_FILE))) throw err;
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

export interface LoadedTemplate {
  template: Template;
  /** The cache key, and the file the template was read from. */
  hash: string;
  path: string;
  /** Whether this call packaged the service (false: the cached copy was read). */
  packaged: boolean;
}

/**
 * The packaged template of the local stage (with `params`, if given), from the cache when its inputs have not
 * changed, else packaged now (synchronously: a second or two) and cached.
 */
export function loadTemplate(root = PROJECT_ROOT, params: StageParams = {}): LoadedTemplate {
  const hash = templateHash(root, params);
  const dir = join(templateCacheDir(root), hash);
  const path = join(dir, TEMPLATE_FILE);
  let packaged = false;
  if (!existsSync(path)) {
    packageInto(root, dir, params);
    packaged = true;
  }
  return { template: JSON.parse(readFileSync(path, 'utf8')) as Template, hash, path, packaged };
}
