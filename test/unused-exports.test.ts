// Every export of the shipped and tooling code (lib/, cli/, functions/, console/src) is imported somewhere in the
// repository, tests included: an export nothing imports is dead code or a name that should stay private to its
// module. The only exports nothing imports are the entry points the platform calls, the handlers serverless.yml
// names, and the types that another export of their module refers to. Imports and exports are read with a real
// TypeScript parser (swc).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSync } from '@swc/core';
import { parse } from 'yaml';

const repository = fileURLToPath(new URL('..', import.meta.url));
/** Where exports are checked. */
const CHECKED_DIRS = ['lib', 'devkit', 'cli', 'functions', 'console/src'];
/** Where imports count as uses. */
const SOURCE_DIRS = [
  'bench',
  'bin',
  'cli',
  'console',
  'devkit',
  'functions',
  'infra',
  'lib',
  'scripts',
  'test',
  'types',
];
const SOURCE_FILE = /\.(ts|mts|js|mjs|cjs)$/;
const isTest = (path: string) => /\.test\.[mc]?[jt]s$/.test(path);

// swc's AST, walked generically.
type Node = Record<string, any>;

function listSources(root: string, dir: string): string[] {
  if (!existsSync(join(root, dir))) return [];
  const out: string[] = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = posix.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listSources(root, path));
    else if (SOURCE_FILE.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The type names a declaration refers to (its own name left out). */
function typesReferredBy(declaration: Node, own: string | undefined): string[] {
  const names: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const child of node) walk(child);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const n = node as Node;
    if (n.type === 'TsTypeReference' && n.typeName?.type === 'Identifier' && n.typeName.value !== own)
      names.push(n.typeName.value);
    // `interface A extends B`, `class A implements B`, `class A extends B`.
    if (n.type === 'TsExpressionWithTypeArguments' && n.expression?.type === 'Identifier')
      names.push(n.expression.value);
    if (n.type === 'ClassDeclaration' && n.superClass?.type === 'Identifier') names.push(n.superClass.value);
    for (const value of Object.values(n)) if (value && typeof value === 'object') walk(value);
  };
  walk(declaration);
  return names;
}

/** `file#name`; `file#*` for every export of the file (a namespace import, `export *`, an import()). */
const key = (file: string, name: string) => `${file}#${name}`;

interface ModuleFacts {
  exports: string[];
  uses: string[];
}

function factsOf(root: string, path: string): ModuleFacts {
  const text = readFileSync(join(root, path), 'utf8');
  const typescript = /\.m?ts$/.test(path);
  const ast = parseSync(text, { syntax: typescript ? 'typescript' : 'ecmascript', target: 'es2022' });
  const exports: string[] = [];
  const uses: string[] = [];
  const target = (specifier: unknown): string | undefined => {
    if (typeof specifier !== 'string' || !specifier.startsWith('.')) return undefined;
    const resolved = relative(root, resolve(root, dirname(path), specifier))
      .split(sep)
      .join('/');
    return resolved;
  };
  const use = (specifier: unknown, name: string) => {
    const file = target(specifier);
    if (file) uses.push(key(file, name));
  };
  for (const item of ast.body as Node[]) {
    switch (item.type) {
      case 'ExportDeclaration': {
        const d = item.declaration as Node;
        const own: string | undefined = d.identifier?.value ?? d.id?.value;
        if (d.type === 'VariableDeclaration')
          for (const v of d.declarations as Node[]) if (v.id.type === 'Identifier') exports.push(v.id.value);
        if (own) exports.push(own);
        // A type another export of the module refers to (an option of an exported function, a field of an
        // exported interface) is part of the module's API, so that callers can name it.
        for (const name of typesReferredBy(d, own)) uses.push(key(path, name));
        break;
      }
      case 'ExportDefaultDeclaration':
      case 'ExportDefaultExpression':
        exports.push('default');
        break;
      case 'ExportNamedDeclaration':
        for (const s of item.specifiers as Node[]) {
          if (s.type === 'ExportNamespaceSpecifier') {
            exports.push(s.name.value);
            use(item.source?.value, '*');
          } else {
            const orig = s.orig?.value ?? 'default';
            exports.push(s.exported?.value ?? orig);
            if (item.source) use(item.source.value, orig);
          }
        }
        break;
      case 'ExportAllDeclaration':
        use(item.source.value, '*');
        break;
      case 'ImportDeclaration':
        for (const s of item.specifiers as Node[]) {
          if (s.type === 'ImportNamespaceSpecifier') use(item.source.value, '*');
          else if (s.type === 'ImportDefaultSpecifier') use(item.source.value, 'default');
          else use(item.source.value, s.imported?.value ?? s.local.value);
        }
        break;
    }
  }
  // import('literal') and typeof import('literal'), anywhere in the file: every export of the module they name.
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const child of node) walk(child);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const n = node as Node;
    if (n.type === 'CallExpression' && n.callee?.type === 'Import') use(n.arguments?.[0]?.expression?.value, '*');
    if (n.type === 'TsImportType') use(n.argument?.value, n.qualifier?.value ?? '*');
    for (const value of Object.values(n)) if (value && typeof value === 'object') walk(value);
  };
  walk(ast.body);
  return { exports, uses };
}

/** The handlers serverless.yml names (`index.handler` for functions/<name>.ts), which only the platform calls. */
function entryPoints(root: string): string[] {
  const service = parse(readFileSync(join(root, 'serverless.yml'), 'utf8')) as {
    functions: Record<string, { handler: string }>;
  };
  return Object.entries(service.functions).map(([name, fn]) =>
    key(`functions/${name}.ts`, fn.handler.split('.').at(-1)!),
  );
}

/** Every `file#name` exported under the checked folders that no file of the repository imports. */
function unusedExports(root: string, allowed: readonly string[]): string[] {
  const files = SOURCE_DIRS.flatMap((dir) => listSources(root, dir));
  const facts = new Map(files.map((file) => [file, factsOf(root, file)]));
  const used = new Set([...facts.values()].flatMap((f) => f.uses));
  const checked = files.filter((f) => CHECKED_DIRS.some((d) => f.startsWith(`${d}/`)) && !isTest(f));
  return checked.flatMap((file) =>
    facts
      .get(file)!
      .exports.map((name) => key(file, name))
      .filter((k) => !used.has(k) && !used.has(key(file, '*')) && !allowed.includes(k)),
  );
}

test('every export of lib/, cli/, functions/, console/src is imported somewhere, part of another, or a handler', () => {
  expect(unusedExports(repository, entryPoints(repository))).toEqual([]);
});

test('the check finds an export nothing imports, and sees the imports that use one', () => {
  const copy = mkdtempSync(join(tmpdir(), 'unused-exports-'));
  try {
    mkdirSync(join(copy, 'lib'));
    mkdirSync(join(copy, 'test'));
    writeFileSync(
      join(copy, 'lib/a.ts'),
      'export const used = 1;\nexport function planted() {}\nexport type Shape = { x: number };\n' +
        'export { used as again };\nexport interface Reached {}\nexport interface Base {}\n' +
        'export interface Option extends Base { a: number }\nexport function take(option: Option) {}\n' +
        'export type Lonely = string;\n',
    );
    writeFileSync(join(copy, 'lib/b.ts'), "export * from './c.ts';\nexport { again } from './a.ts';\n");
    writeFileSync(join(copy, 'lib/c.ts'), 'export const throughStar = 1;\n');
    writeFileSync(
      join(copy, 'test/a.test.ts'),
      "import { used, type Shape } from '../lib/a.ts';\nimport * as b from '../lib/b.ts';\n" +
        "let r: import('../lib/a.ts').Reached;\n",
    );
    expect(unusedExports(copy, [])).toEqual(['lib/a.ts#planted', 'lib/a.ts#take', 'lib/a.ts#Lonely']);
    expect(unusedExports(copy, ['lib/a.ts#planted', 'lib/a.ts#take', 'lib/a.ts#Lonely'])).toEqual([]);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
});
