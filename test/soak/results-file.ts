// test/soak/RESULTS.md, one section per part of the soak (`## <title>`), each saying when and how it was run. A
// run writes the sections of the parts it ran and keeps the others as the file holds them: every figure in the
// file comes from a real run, and the sections say which.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const TITLE = '# Soak results';

/** The sections of the file, by title, in the file's order (a file of one untitled part: under `untitled`). */
export function readSections(text: string, untitled: string): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  let current: string[] | null = null;
  for (const line of text.split('\n')) {
    if (line === TITLE) continue;
    const heading = /^## (.+)$/.exec(line);
    if (heading) {
      current = [];
      sections.set(heading[1]!, current);
    } else if (current) current.push(line);
    else if (line.trim() !== '') {
      current = [line];
      sections.set(untitled, current);
    }
  }
  for (const lines of sections.values()) {
    while (lines.length && lines.at(-1)!.trim() === '') lines.pop();
    while (lines.length && lines[0]!.trim() === '') lines.shift();
  }
  return sections;
}

/** Writes `written` over the file's sections of the same titles, in `order`, keeping every other section. */
export function writeSections(
  file: URL,
  written: ReadonlyMap<string, string[]>,
  order: readonly string[],
  untitled: string,
): void {
  const sections = existsSync(file) ? readSections(readFileSync(file, 'utf8'), untitled) : new Map<string, string[]>();
  for (const [title, lines] of written) sections.set(title, lines);
  const titles = [...order.filter((t) => sections.has(t)), ...[...sections.keys()].filter((t) => !order.includes(t))];
  const out = [TITLE, ''];
  for (const t of titles) out.push(`## ${t}`, '', ...sections.get(t)!, '');
  writeFileSync(file, out.join('\n'));
}
