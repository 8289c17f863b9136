// The environment variables code reads directly, outside a function's schema (lib/config/read-env.ts): what
// test/docs-tables.test.ts holds docs/configuration.md to, and what test/support/caller-env.ts clears.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The environment variables code reads directly, outside a schema: `env.NAME`, `process.env.NAME`, `env['NAME']`,
 * and names handed with the environment to a helper that reads them (`positiveInteger(env, 'NAME', ...)`).
 * Comment lines are left out. Names taken apart from an environment (`const { NAME } = env`) are refused, or with
 * `destructured: 'read'` read too.
 */
export function envReads(file: string, opts: { destructured?: 'refuse' | 'read' } = {}): string[] {
  const code = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line))
    .join('\n');
  const destructured = [...code.matchAll(/\{([^}]*)\}\s*=\s*(?:[\w.()]+\.)?env\b/g)];
  if (destructured.length > 0 && opts.destructured !== 'read')
    throw new Error(`${relative(root, file)} destructures the environment: read each variable as env.NAME`);
  const names = destructured.flatMap((m) =>
    [...m[1]!.matchAll(/\b([A-Z][A-Z0-9_]*)\b\s*(?=[:,]|$)/g)].map((n) => n[1]!),
  );
  const patterns = [
    /\benv\??\.([A-Z][A-Z0-9_]*)\b/g,
    /\benv\[\s*'([A-Z][A-Z0-9_]*)'\s*\]/g,
    /\(\s*env\s*,\s*'([A-Z][A-Z0-9_]*)'/g,
  ];
  return [...names, ...patterns.flatMap((p) => [...code.matchAll(p)].map((m) => m[1]!))];
}
