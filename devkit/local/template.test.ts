// The template cache: packaged once per content of serverless.yml and infra/, packaged again when it changes.
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type LoadedTemplate, PROJECT_ROOT, loadTemplate, templateCacheDir, templateHash } from './template.ts';

let root: string;
let project: LoadedTemplate;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'template-cache-'));
  cpSync(join(PROJECT_ROOT, 'serverless.yml'), join(root, 'serverless.yml'));
  cpSync(join(PROJECT_ROOT, 'infra'), join(root, 'infra'), { recursive: true });
  symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(root, 'node_modules'));
  // The copy's cache starts with the project's packaged template (test/support/global-setup.mjs packaged it):
  // the same inputs, the same key.
  project = loadTemplate();
  cpSync(dirname(project.path), join(templateCacheDir(root), project.hash), { recursive: true });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

test('a setting changed in infra/ packages again and reaches the template; unchanged inputs reuse the copy', () => {
  const first = loadTemplate(root);
  expect([first.packaged, first.hash]).toEqual([false, project.hash]);
  expect(first.template.Resources.CallbackFifoQueue!.Properties!.VisibilityTimeout).toBe(180);

  const queues = join(root, 'infra/queues.yml');
  writeFileSync(queues, readFileSync(queues, 'utf8').replace('VisibilityTimeout: 180', 'VisibilityTimeout: 181'));
  const changed = loadTemplate(root);
  expect(changed.hash).not.toBe(first.hash);
  expect(changed.packaged).toBe(true);
  expect(changed.template.Resources.CallbackFifoQueue!.Properties!.VisibilityTimeout).toBe(181);
  // What it packaged is the copy read next.
  const again = loadTemplate(root);
  expect([again.packaged, again.hash]).toEqual([false, changed.hash]);
});

test('a test file beside infra/ is no input of the template', () => {
  const before = templateHash(root);
  writeFileSync(join(root, 'infra/extra.test.ts'), '// not part of the template\n');
  expect(templateHash(root)).toBe(before);
});
