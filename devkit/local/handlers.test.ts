// The local stack runs what is deployed only if each entry of functions/ is the very factory the stack calls,
// given process.env once at load, and nothing more.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { handlerFactories } from './handlers.ts';

const root = new URL('../..', import.meta.url).pathname;
const entries = readdirSync(join(root, 'functions'))
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
  .map((f) => f.slice(0, -'.ts'.length));

test('every function of serverless.yml has an entry in functions/ and a factory the local stack knows', () => {
  const service = parse(readFileSync(join(root, 'serverless.yml'), 'utf8')) as { functions: Record<string, unknown> };
  expect(Object.keys(service.functions).sort()).toEqual(entries.sort());
  expect(Object.keys(handlerFactories).sort()).toEqual(entries.sort());
});

test.each(entries)(
  'functions/%s.ts exports the handler its factory builds from process.env, and nothing else',
  (key) => {
    const factory = handlerFactories[key]!;
    const code = readFileSync(join(root, 'functions', `${key}.ts`), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.startsWith('//'));
    expect(code).toEqual([
      expect.stringMatching(new RegExp(`^import \\{ ${factory.name} \\} from '\\.\\./lib/[a-z-]+/handler\\.ts';$`)),
      `export const handler = ${factory.name}(process.env);`,
    ]);
  },
);
