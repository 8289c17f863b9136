// The shape of the house, read from the import statements of every source file: the Lambda handlers build on
// lib/, lib/ builds on nothing above it (cli/, bench/, tests), the domain and the platform's description stay
// free of AWS, and what ships never loads a package that `npm install --omit=dev` leaves out. Imports are
// read with a real TypeScript parser (swc), so comments and strings that look like imports do not count.
import { builtinModules } from 'node:module';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSync } from '@swc/core';

const root = fileURLToPath(new URL('..', import.meta.url));
const SOURCE_DIRS = ['bench', 'bin', 'cli', 'functions', 'infra', 'lib', 'scripts', 'test', 'types'];
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
  expect(seen('lib/local/handlers.ts')).toContainEqual({
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

test(`no module in lib/ is over ${MAX_LIB_LINES} lines`, () => {
  const modules = sources.filter((f) => under(f.path, 'lib') && !isTest(f.path));
  const oversized = modules.filter((f) => f.lines > MAX_LIB_LINES && !OVERSIZED_LIB_FILES.has(f.path));
  expect(oversized.map((f) => `${f.path}: ${f.lines} lines`)).toEqual([]);
  // An exception that no longer applies is removed, so the list cannot hide a new oversized file.
  const stale = [...OVERSIZED_LIB_FILES].filter(
    (path) => (modules.find((f) => f.path === path)?.lines ?? 0) <= MAX_LIB_LINES,
  );
  expect(stale.map((path) => `${path} is gone or within the limit: remove it from OVERSIZED_LIB_FILES`)).toEqual([]);
});
