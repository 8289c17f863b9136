// The shape of the house, read from the import statements of every source file: the Lambda handlers build on
// lib/, lib/ builds on nothing above it (cli/, bench/, tests), every import points down the layers of LAYERS
// and no files import one another in a loop, the domain and the platform's description stay free of AWS,
// and what ships never loads a package that `npm install --omit=dev` leaves out. Imports are
// read with a real TypeScript parser (swc), so comments and strings that look like imports do not count.
import { builtinModules } from 'node:module';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSync } from '@swc/core';

const root = fileURLToPath(new URL('..', import.meta.url));
const SOURCE_DIRS = ['bench', 'bin', 'cli', 'devkit', 'functions', 'infra', 'lib', 'scripts', 'test', 'types'];
const SOURCE_FILE = /\.(ts|mts|js|mjs)$/;
const MAX_LIB_LINES = 400;
/** Files of lib/ allowed past MAX_LIB_LINES: none. */
const OVERSIZED_LIB_FILES = new Set<string>();

interface Import {
  /** Repository-relative path (posix) for a relative import, the package name for a bare one. */
  target: string;
  kind: 'file' | 'package';
  /** Erased when compiled: `import type`, `export type`, `typeof import(...)`. */
  typeOnly: boolean;
}

interface SourceFile {
  path: string;
  lines: number;
  imports: Import[];
}

function listSources(dir: string): string[] {
  if (!existsSync(join(root, dir))) return [];
  const out: string[] = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = posix.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listSources(path));
    else if (SOURCE_FILE.test(entry.name)) out.push(path);
  }
  return out;
}

const builtins = new Set(builtinModules);

function classify(from: string, specifier: string, typeOnly: boolean): Import | null {
  if (specifier.startsWith('.')) {
    const target = relative(root, join(root, dirname(from), specifier))
      .split(sep)
      .join('/');
    return { target, kind: 'file', typeOnly };
  }
  if (specifier.startsWith('node:') || builtins.has(specifier.split('/')[0]!)) return null;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
  return { target: name, kind: 'package', typeOnly };
}

/**
 * The fixed part of a dynamic import's path: the literal itself, or for a template literal such as
 * `../functions/${key}.ts` the folder its fixed relative prefix names (`../functions`), since any module of
 * that folder may be loaded. A path that does not start with a fixed relative folder names nothing to police.
 */
function dynamicSpecifier(argument: Record<string, any> | undefined): string | undefined {
  if (argument?.type === 'StringLiteral') return argument.value;
  if (argument?.type !== 'TemplateLiteral') return undefined;
  const prefix: string = argument.quasis[0].cooked ?? '';
  if (argument.expressions.length === 0) return prefix;
  const folder = prefix.slice(0, prefix.lastIndexOf('/'));
  return folder.startsWith('.') ? folder : undefined;
}

/**
 * Every static import and re-export, every `import('literal')` (a template literal with a fixed relative
 * folder counts as an import of that folder), and every `typeof import('literal')`.
 */
function importsOf(path: string, text: string): Import[] {
  const ast = parseSync(text, { syntax: path.endsWith('.ts') || path.endsWith('.mts') ? 'typescript' : 'ecmascript' });
  const found: Import[] = [];
  const add = (specifier: unknown, typeOnly: boolean) => {
    if (typeof specifier !== 'string') return;
    const imp = classify(path, specifier, typeOnly);
    if (imp) found.push(imp);
  };
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const child of node) walk(child);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const n = node as Record<string, any>;
    switch (n.type) {
      case 'ImportDeclaration':
      case 'ExportNamedDeclaration':
      case 'ExportAllDeclaration':
        if (n.source) add(n.source.value, n.typeOnly === true);
        break;
      case 'CallExpression':
        if (n.callee?.type === 'Import') add(dynamicSpecifier(n.arguments?.[0]?.expression), false);
        break;
      case 'TsImportType':
        add(n.argument?.value, true);
        break;
    }
    for (const value of Object.values(n)) if (value && typeof value === 'object') walk(value);
  };
  walk(ast.body);
  return found;
}

const sources: SourceFile[] = SOURCE_DIRS.flatMap(listSources).map((path) => {
  const text = readFileSync(join(root, path), 'utf8');
  return { path, lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0), imports: importsOf(path, text) };
});

const isTest = (path: string) => path.startsWith('test/') || /\.test\.[mc]?[jt]s$/.test(path);
const under = (path: string, ...dirs: string[]) => dirs.some((d) => path === d || path.startsWith(`${d}/`));
const shipped = sources.filter((f) => under(f.path, 'lib', 'functions') && !isTest(f.path));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  devDependencies?: Record<string, string>;
};
const devDependencies = new Set(Object.keys(pkg.devDependencies ?? {}));

/** `file -> target` for every import of `files` that `bad` accepts. */
function violations(files: readonly SourceFile[], bad: (imp: Import, file: SourceFile) => boolean): string[] {
  return files.flatMap((f) => f.imports.filter((imp) => bad(imp, f)).map((imp) => `${f.path} -> ${imp.target}`));
}

test('the import reader sees the imports it is meant to police', () => {
  const seen = (path: string) => sources.find((f) => f.path === path)!.imports;
  expect(seen('lib/ingest/handler.ts')).toContainEqual({ target: 'aws-lambda', kind: 'package', typeOnly: true });
  // The local stack builds each handler with the factory its entry in functions/ calls.
  expect(seen('devkit/local/handlers.ts')).toContainEqual({
    target: 'lib/ingest/handler.ts',
    kind: 'file',
    typeOnly: false,
  });
  expect(importsOf('x/a.ts', "// import x from '../test/a.ts'\nconst s = \"import y from 'z'\";")).toEqual([]);
  expect(importsOf('x/a.ts', "export * from '../test/a.ts';\nlet m: typeof import('fast-check');")).toEqual([
    { target: 'test/a.ts', kind: 'file', typeOnly: false },
    { target: 'fast-check', kind: 'package', typeOnly: true },
  ]);
  const dynamic = [
    'await import(`../cli/${name}.ts`);',
    'await import(`../test/fixed.ts`);',
    "await import('fast-check');",
    'await import(`${anywhere}.ts`);',
    'await import(`../functions/in${name}.ts`);',
  ].join('\n');
  expect(importsOf('lib/a.ts', dynamic)).toEqual([
    { target: 'cli', kind: 'file', typeOnly: false },
    { target: 'test/fixed.ts', kind: 'file', typeOnly: false },
    { target: 'fast-check', kind: 'package', typeOnly: false },
    { target: 'functions', kind: 'file', typeOnly: false },
  ]);
});

/**
 * The layers, bottom first; each entry is a folder or a file. A module imports from its own entry or from an
 * entry of a lower layer, never from one above it nor from a neighbour in its own layer (the ingest, the
 * worker and the read API share only what lies below them). Tests import from anywhere.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['lib/text.ts', 'lib/in-parallel.ts'],
  ['lib/log.ts', 'lib/time-point.ts', 'lib/fifo-ids.ts', 'lib/http-responses.ts'],
  // What the platform is: its services, modes, file names, failures, bodies and signing.
  ['lib/platform'],
  // Signature modes and verdicts, held signatures, verification, replay keys, secrets, source allow-list.
  ['lib/signature'],
  // The pure domain and its ports (TaskStore, EventPublisher).
  ['lib/domain'],
  // How a function reads its environment: durations as the domain's time settings take them.
  ['lib/config'],
  ['lib/queue-message.ts'],
  // The adapters: DynamoDB, SQS, SNS.
  ['lib/aws'],
  // The handlers' logic.
  ['lib/ingest', 'lib/worker', 'lib/api', 'lib/sweeper', 'lib/verifier'],
  ['functions'],
  // The developer kit (DEVKIT): what runs the stack on a laptop, sends and checks callbacks, seeds tasks.
  ['devkit/console', 'devkit/emulator', 'devkit/verify'],
  ['devkit/local', 'devkit/seeds/sqs-record.ts'],
  ['devkit/seeds/seed-tasks.ts'],
  ['bench', 'cli'],
  ['bin'],
];

/** The LAYERS entry a path belongs to (the longest that names it), and its layer. */
function placeOf(path: string): { entry: string; layer: number } | undefined {
  let found: { entry: string; layer: number } | undefined;
  LAYERS.forEach((entries, layer) => {
    for (const entry of entries) {
      if (under(path, entry) && (!found || entry.length > found.entry.length)) found = { entry, layer };
    }
  });
  return found;
}

/** Whether an import from `from` to `to` points up, or sideways to a neighbour of the same layer. */
function pointsUp(from: string, to: string): boolean {
  const a = placeOf(from);
  const b = placeOf(to);
  if (!a || !b || a.entry === b.entry) return false;
  return b.layer >= a.layer;
}

const nonTests = sources.filter((f) => !isTest(f.path));
const fileImports = (f: SourceFile) => f.imports.filter((imp) => imp.kind === 'file');

test('the layer reader places what it is meant to', () => {
  expect(placeOf('lib/signature/verify.ts')?.entry).toBe('lib/signature');
  expect(placeOf('lib/http-responses.ts')?.entry).toBe('lib/http-responses.ts');
  expect(placeOf('lib/domain/task-store.ts')?.entry).toBe('lib/domain');
  expect(placeOf('scripts/build.mjs')).toBeUndefined();
  expect(pointsUp('lib/domain/task-store.ts', 'lib/queue-message.ts')).toBe(true);
  expect(pointsUp('lib/worker/recover.ts', 'lib/ingest/secrets.ts')).toBe(true);
  expect(pointsUp('lib/worker/recover.ts', 'lib/signature/secrets.ts')).toBe(false);
  expect(pointsUp('bench/end-to-end.ts', 'cli/main.ts')).toBe(true);
  expect(pointsUp('lib/worker/process-batch.ts', 'lib/worker/config.ts')).toBe(false);
});

test('every module of lib/, functions/, bench/, cli/ and bin/ has its place in LAYERS', () => {
  const placed = ['lib', 'devkit', 'functions', 'bench', 'cli', 'bin'];
  const unplaced = nonTests.filter((f) => under(f.path, ...placed) && !placeOf(f.path)).map((f) => f.path);
  expect(unplaced).toEqual([]);
});

test('every import points down the layers', () => {
  expect(violations(nonTests, (imp, f) => imp.kind === 'file' && pointsUp(f.path, imp.target))).toEqual([]);
});

// The directions that once pointed up, each named, so that a new layer list cannot let one back in.
test.each([
  ['the domain reads signature types from lib/signature, not the queue message', 'lib/domain', 'lib/queue-message.ts'],
  ['the platform owns the services; it imports nothing of the domain', 'lib/platform', 'lib/domain'],
  ['the worker checks signatures again with lib/signature, not the ingest', 'lib/worker', 'lib/ingest'],
  ['the read API answers with lib/http-responses.ts, not the ingest', 'lib/api', 'lib/ingest'],
  ['the bench opens a stack with devkit/local/target.ts, not the CLI', 'bench', 'cli'],
  ['the signature module is below the domain', 'lib/signature', 'lib/domain'],
  ['the signature module is below the queue message', 'lib/signature', 'lib/queue-message.ts'],
])('%s', (_why, from, to) => {
  const files = nonTests.filter((f) => under(f.path, from));
  expect(files.length).toBeGreaterThan(0);
  expect(violations(files, (imp) => imp.kind === 'file' && under(imp.target, to))).toEqual([]);
});

test('the HTTP answers have one module, lib/http-responses.ts: no other responses module is imported', () => {
  const bad = (imp: Import) => imp.kind === 'file' && /(^|\/)responses\.ts$/.test(imp.target);
  expect(violations(sources, bad)).toEqual([]);
});

test("the worker's logic reaches AWS only through the domain's ports, built by its config and handler", () => {
  // config.ts builds the adapters, handler.ts hands them the client settings: the composition root.
  const roots = new Set(['lib/worker/config.ts', 'lib/worker/handler.ts']);
  const logic = nonTests.filter((f) => under(f.path, 'lib/worker') && !roots.has(f.path));
  expect(logic.length).toBeGreaterThan(0);
  const bad = (imp: Import) =>
    imp.kind === 'file' ? under(imp.target, 'lib/aws') : imp.target.startsWith('@aws-sdk/');
  expect(violations(logic, bad)).toEqual([]);
});

/** The groups of files (tests left out) that import one another in a loop, each as `a -> b -> ... -> a`. */
function importLoops(files: readonly SourceFile[]): string[] {
  const edges = new Map(files.map((f) => [f.path, fileImports(f).map((imp) => imp.target)] as const));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const loops: string[] = [];
  // Tarjan's strongly connected components: a component of more than one file is a loop.
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!edges.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) loops.push(component.sort().join(' <-> '));
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return loops;
}

test('no files import one another in a loop (type-only imports count: they tie the files as much)', () => {
  const a: SourceFile = { path: 'x/a.ts', lines: 1, imports: [{ target: 'x/b.ts', kind: 'file', typeOnly: true }] };
  const b: SourceFile = { path: 'x/b.ts', lines: 1, imports: [{ target: 'x/a.ts', kind: 'file', typeOnly: false }] };
  expect(importLoops([a, b])).toEqual(['x/a.ts <-> x/b.ts']);
  expect(importLoops(nonTests)).toEqual([]);
});

/** The developer kit: what a laptop, the tests and the bench use and a Lambda function never loads. */
const DEVKIT = ['devkit'];

test('what Lambda loads (lib/ and functions/) never imports the developer kit', () => {
  const loaded = nonTests.filter((f) => under(f.path, 'lib', 'functions') && !under(f.path, ...DEVKIT));
  expect(loaded.length).toBeGreaterThan(0);
  expect(violations(loaded, (imp) => imp.kind === 'file' && under(imp.target, ...DEVKIT))).toEqual([]);
});

test('functions/ builds on lib/ only', () => {
  const handlers = sources.filter((f) => under(f.path, 'functions'));
  expect(violations(handlers, (imp) => imp.kind === 'file' && !under(imp.target, 'lib', 'functions'))).toEqual([]);
});

test('lib/ never reaches functions/: the local stack builds the handlers with the factories the entries call', () => {
  const lib = sources.filter((f) => under(f.path, 'lib') && !isTest(f.path));
  expect(violations(lib, (imp) => imp.kind === 'file' && under(imp.target, 'functions'))).toEqual([]);
});

test('nothing in lib/ or functions/ imports from cli/, bench/ or test/', () => {
  expect(violations(shipped, (imp) => imp.kind === 'file' && under(imp.target, 'cli', 'bench', 'test'))).toEqual([]);
});

test('nothing outside the tests imports from test/', () => {
  const others = sources.filter((f) => !isTest(f.path));
  expect(violations(others, (imp) => imp.kind === 'file' && under(imp.target, 'test'))).toEqual([]);
});

test('lib/ and functions/ load no devDependency (type-only imports are erased and do not count)', () => {
  expect(devDependencies.size).toBeGreaterThan(0);
  const bad = (imp: Import) => imp.kind === 'package' && !imp.typeOnly && devDependencies.has(imp.target);
  expect(violations(shipped, bad)).toEqual([]);
});

test('lib/domain and lib/platform import nothing from lib/aws or the AWS SDK', () => {
  const pure = sources.filter((f) => under(f.path, 'lib/domain', 'lib/platform'));
  const bad = (imp: Import) =>
    imp.kind === 'file' ? under(imp.target, 'lib/aws') : imp.target.startsWith('@aws-sdk/');
  expect(violations(pure, bad)).toEqual([]);
});

test(`no module in lib/ or devkit/ is over ${MAX_LIB_LINES} lines`, () => {
  const modules = sources.filter((f) => under(f.path, 'lib', 'devkit') && !isTest(f.path));
  const oversized = modules.filter((f) => f.lines > MAX_LIB_LINES && !OVERSIZED_LIB_FILES.has(f.path));
  expect(oversized.map((f) => `${f.path}: ${f.lines} lines`)).toEqual([]);
  // An exception that no longer applies is removed, so the list cannot hide a new oversized file.
  const stale = [...OVERSIZED_LIB_FILES].filter(
    (path) => (modules.find((f) => f.path === path)?.lines ?? 0) <= MAX_LIB_LINES,
  );
  expect(stale.map((path) => `${path} is gone or within the limit: remove it from OVERSIZED_LIB_FILES`)).toEqual([]);
});
