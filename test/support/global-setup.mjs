// Packages the local stage's template once before the test files run (devkit/local/template.ts keeps it
// under .data/template/<hash>/), so that the files that start a local stack read the cached copy instead
// of each packaging the service again.
export default async function packageTemplateOnce() {
  const { loadTemplate } = await import('../../devkit/local/template.ts');
  loadTemplate();
}
