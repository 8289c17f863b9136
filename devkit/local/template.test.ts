// The template cache: packaged once per content of serverless.yml and infra/, packaged again when it changes.
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT, loadTemplate, templateHash } from './template.ts';

let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'template-cache-'));
  cpSync(join(PROJECT_ROOT, 'serverless.yml'), join(root, 'serverless.yml'));
  cpSync(join(PROJECT_ROOT, 'infra'), join(root, 'infra'), { recursive: true });
  symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(root, 'node_modules'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

test('a setting changed in infra/ packages again and reaches the template; unchanged inputs reuse the copy', () => {
  const first = loadTemplate(root);
  expect(first.packaged).toBe(true);
  expect(first.template.Resources.CallbackFifoQueue!.Properties!.VisibilityTimeout).toBe(180);
  const again = loadTemplate(root);
  expect([again.packaged, again.hash]).toEqual([false, first.hash]);

  const queues = join(root, 'infra/queues.yml');
  writeFileSync(queues, readFileSync(queues, 'utf8').replace('VisibilityTimeout: 180', 'VisibilityTimeout: 181'));
  const changed = loadTemplate(root);
  expect(changed.hash).not.toBe(first.hash);
  expect(changed.packaged).toBe(true);
  expect(changed.template.Resources.CallbackFifoQueue!.Properties!.VisibilityTimeout).toBe(181);
});

test('a test file beside infra/ is no input of the template', () => {
  const before = templateHash(root);
  writeFileSync(join(root, 'infra/extra.test.ts'), '// not part of the template\n');
  expect(templateHash(root)).toBe(before);
});
