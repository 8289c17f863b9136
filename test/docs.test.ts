// The documentation cannot drift from the repository: every relative link in README.md and docs/ reaches a file
// (and, in Markdown, a heading), every section a code comment cites names a file of the repository that has it,
// every page of docs/ is linked from somewhere, and the README stays an overview.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const README_MAX_LINES = 200;
/** Folders whose code may cite sections, and the files at the top that may too. */
const codeRoots = ['lib', 'functions', 'cli', 'bench', 'test', 'infra', 'scripts', 'bin', 'types', 'serverless.yml'];
const codeExtensions = /\.(ts|js|mjs|cjs|ya?ml)$/;
const SECTION = '\u00a7';

function walk(path: string, keep: (file: string) => boolean): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return keep(path) ? [path] : [];
  return readdirSync(path)
    .filter((name) => name !== 'node_modules' && name !== 'fixtures')
    .flatMap((name) => walk(join(path, name), keep));
}

const markdownFiles = [join(root, 'README.md'), ...walk(join(root, 'docs'), (f) => f.endsWith('.md'))];
const rel = (file: string) => relative(root, file);

/** Lines outside fenced code blocks, with inline code spans removed (a link inside one is not a link). */
function proseLines(text: string): string[] {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line.replace(/`[^`]*`/g, (code) => code.replace(/[[\]()]/g, ' '));
  });
}

interface Heading {
  text: string;
  slug: string;
}

/** Headings as GitHub renders them, with the anchors it gives them (repeats get -1, -2, ...). */
function headingsOf(text: string): Heading[] {
  const seen = new Map<string, number>();
  const headings: Heading[] = [];
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const match = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!match) continue;
    const plain = match[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '');
    const base = plain
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    headings.push({ text: plain.trim(), slug: count === 0 ? base : `${base}-${count}` });
  }
  return headings;
}

const headingCache = new Map<string, Heading[]>();
function headingsOfFile(file: string): Heading[] {
  let headings = headingCache.get(file);
  if (!headings) {
    headings = headingsOf(readFileSync(file, 'utf8'));
    headingCache.set(file, headings);
  }
  return headings;
}

/**
 * Whether a Markdown file has section `number` ("4", "2.7", "7.2"): a heading that starts with it ("## 4. A task",
 * "### 2.7 File name pattern"), or, for "7.2", item 2 of a numbered list under the heading of section 7.
 */
function hasSection(file: string, number: string): boolean {
  const text = readFileSync(file, 'utf8');
  const startsWith = (heading: string, n: string) => new RegExp(`^${n.replace(/\./g, '\\.')}(\\.|\\s|$)`).test(heading);
  if (headingsOfFile(file).some((h) => startsWith(h.text, number))) return true;
  const parent = number.split('.').slice(0, -1).join('.');
  const item = number.split('.').at(-1);
  if (!parent) return false;
  const lines = text.split('\n');
  const start = lines.findIndex((line) => {
    const m = /^#{1,6}\s+(.*)$/.exec(line);
    return m !== null && startsWith(m[1]!, parent);
  });
  if (start < 0) return false;
  const end = lines.findIndex((line, i) => i > start && /^#{1,6}\s/.test(line));
  const body = lines.slice(start + 1, end < 0 ? undefined : end);
  return body.some((line) => line.startsWith(`${item}. `));
}

describe('README.md', () => {
  test(`is an overview of at most ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(join(root, 'README.md'), 'utf8').trimEnd().split('\n').length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });
});

describe('links in README.md and docs/', () => {
  const links = markdownFiles.flatMap((file) =>
    proseLines(readFileSync(file, 'utf8')).flatMap((line, i) =>
      [...line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => ({ file, line: i + 1, target: m[1]! })),
    ),
  );
  const relativeLinks = links.filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l.target));

  test('there are links to check', () => {
    expect(relativeLinks.length).toBeGreaterThan(20);
  });

  test('every relative link reaches a file or folder of the repository, and a heading of it', () => {
    const broken: string[] = [];
    for (const { file, line, target } of relativeLinks) {
      const [path = '', anchor] = target.split('#');
      const resolved = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
      const where = `${rel(file)}:${line} -> ${target}`;
      if (!resolved.startsWith(root) || !existsSync(resolved)) {
        broken.push(`${where}: no such file`);
        continue;
      }
      if (anchor && resolved.endsWith('.md') && !headingsOfFile(resolved).some((h) => h.slug === anchor)) {
        broken.push(`${where}: no heading with that anchor in ${rel(resolved)}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test('every page of docs/ is linked from the README or from another page', () => {
    const linked = new Set(
      relativeLinks
        .map(({ file, target }) => resolve(dirname(file), decodeURIComponent(target.split('#')[0]!)))
        .filter((target) => target.endsWith('.md')),
    );
    const orphans = markdownFiles.filter((f) => !f.endsWith('README.md') && !linked.has(f)).map(rel);
    expect(orphans).toEqual([]);
  });
});

describe('sections cited in code', () => {
  const codeFiles = codeRoots
    .flatMap((name) => walk(join(root, name), (f) => codeExtensions.test(f)))
    .filter((f) => f !== fileURLToPath(import.meta.url));
  const isComment = (line: string) => /^\s*(\/\/|\/\*|\*|#)/.test(line);
  /** A Markdown file named by its path from the repository's root. */
  const fileMention = /\b((?:[\w.-]+\/)*[\w.-]+\.md)\b/g;

  test('every section sign names a Markdown file of the repository that has that section', () => {
    const problems: string[] = [];
    for (const file of codeFiles) {
      const lines = readFileSync(file, 'utf8').split('\n');
      let lastFileInComment: string | undefined;
      lines.forEach((line, i) => {
        if (!isComment(line) && !line.includes('//')) lastFileInComment = undefined;
        // Walk the line left to right: a file mention applies to the section signs after it.
        const tokens = [
          ...[...line.matchAll(fileMention)].map((m) => ({ at: m.index, file: m[1]! })),
          ...[...line.matchAll(new RegExp(`${SECTION}\\s*(\\d+(?:\\.\\d+)*)`, 'g'))].map((m) => ({
            at: m.index,
            section: m[1]!,
          })),
        ].sort((a, b) => a.at - b.at);
        for (const token of tokens) {
          if ('file' in token) {
            lastFileInComment = token.file;
            continue;
          }
          const where = `${rel(file)}:${i + 1}: ${SECTION}${token.section}`;
          if (!lastFileInComment) {
            problems.push(`${where} names no file (write e.g. "docs/contract.md ${SECTION}4")`);
            continue;
          }
          const cited = join(root, lastFileInComment);
          if (!existsSync(cited)) problems.push(`${where}: ${lastFileInComment} does not exist`);
          else if (!hasSection(cited, token.section))
            problems.push(`${where}: ${lastFileInComment} has no such section`);
        }
        if (!isComment(line) && !line.includes('//')) lastFileInComment = undefined;
      });
    }
    expect(problems).toEqual([]);
  });

  test('every page of the docs a comment names exists, with the heading it quotes', () => {
    const problems: string[] = [];
    for (const file of codeFiles) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (!isComment(line) && !line.includes('//') && !line.includes('#')) return;
          for (const m of line.matchAll(/\b(docs\/[\w./-]+\.md|README(?:\.md)?)\b(?:,?\s+"([^"]+)")?/g)) {
            const cited = join(root, m[1] === 'README' ? 'README.md' : m[1]!);
            const where = `${rel(file)}:${i + 1}: ${m[0]}`;
            if (!existsSync(cited)) problems.push(`${where}: no such file`);
            else if (m[2]) {
              const wanted = m[2].toLowerCase();
              const found = headingsOfFile(cited).some(
                (h) => h.text.toLowerCase().replace(/^\d+(\.\d+)*\.?\s+/, '') === wanted,
              );
              if (!found) problems.push(`${where}: no heading "${m[2]}"`);
            }
          }
        });
    }
    expect(problems).toEqual([]);
  });

  test('the contract keeps the section numbers the code cites', () => {
    for (const n of ['1', '2', '3', '4', '5']) expect(hasSection(join(root, 'docs/contract.md'), n)).toBe(true);
    expect(hasSection(join(root, 'docs/platform-callbacks.md'), '7.2')).toBe(true);
    expect(hasSection(join(root, 'docs/platform-callbacks.md'), '2.11')).toBe(true);
    expect(hasSection(join(root, 'docs/platform-callbacks.md'), '7.9')).toBe(false);
  });
});
