/**
 * Every link of the documents points at something in the repository: a relative link at a file or folder that
 * exists, an anchor at a heading of that page (as GitHub names it), and nothing leaves the repository except for
 * a published standard. Text moves between documents; a link left behind would otherwise break unseen.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

/** Hosts a document may link to: published standards, which outlive any page of ours. */
const STANDARDS = new Set(['www.rfc-editor.org', 'datatracker.ietf.org', 'www.iana.org']);

/** The documents: the README, the changelog, every page under docs/ and the benchmark results. */
function documents(): string[] {
  const pages = (folder: string): string[] =>
    readdirSync(join(root, folder), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory()
        ? pages(join(folder, entry.name))
        : entry.name.endsWith('.md')
          ? [join(folder, entry.name)]
          : [],
    );
  return ['README.md', 'CHANGELOG.md', 'bench/RESULTS.md', ...pages('docs')].filter((path) =>
    existsSync(join(root, path)),
  );
}

/** The lines outside fenced code blocks; with `blankCode`, inline code spans lose their brackets (no links). */
function prose(markdown: string, blankCode = true): string[] {
  let fenced = false;
  return markdown.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return '';
    }
    if (fenced) return '';
    return blankCode ? line.replace(/`[^`]*`/g, (code) => code.replace(/[[\]()<>]/g, ' ')) : line;
  });
}

/** Targets of Markdown links and images, reference definitions, and HTML `src`/`href` attributes. */
function linkTargets(markdown: string): string[] {
  const text = prose(markdown).join('\n');
  return [
    ...[...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1] as string),
    ...[...text.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)].map((match) => match[1] as string),
    ...[...text.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((match) => match[1] as string),
  ];
}

/** GitHub's anchor of a heading: its text lowercased, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a page has: one per heading (repeats numbered as GitHub numbers them) and HTML ids. */
function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(markdown, false)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const base = slug(heading[1] as string);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      found.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const match of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) found.add(match[1] as string);
  }
  return found;
}

/** What is wrong with one link of a document, or undefined when it resolves. */
function problem(document: string, target: string): string | undefined {
  if (/^[a-z][a-z+.-]*:/i.test(target)) {
    if (target.startsWith('mailto:')) return 'leaves the repository';
    const host = URL.canParse(target) ? new URL(target).host : '';
    return STANDARDS.has(host) ? undefined : 'leaves the repository';
  }
  const [pathPart = '', anchor] = target.split('#');
  const file = pathPart === '' ? join(root, document) : join(root, dirname(document), decodeURI(pathPart));
  if (!existsSync(file)) return `no such file: ${relative(root, file)}`;
  if (!relative(root, file) || relative(root, file).startsWith('..')) return 'leaves the repository';
  if (anchor === undefined || anchor === '') return undefined;
  if (statSync(file).isDirectory() || !file.endsWith('.md')) return 'an anchor on something that is not a page';
  return anchors(readFileSync(file, 'utf8')).has(decodeURIComponent(anchor)) ? undefined : `no heading #${anchor}`;
}

describe('links in the documents', () => {
  it('finds the documents and their links', () => {
    const all = documents();
    expect(all).toContain('README.md');
    expect(all).toContain('docs/design.md');
    expect(all.flatMap((path) => linkTargets(readFileSync(join(root, path), 'utf8'))).length).toBeGreaterThan(50);
  });

  for (const document of documents())
    it(`${document}: every link resolves inside the repository`, () => {
      const broken = linkTargets(readFileSync(join(root, document), 'utf8'))
        .map((target) => [target, problem(document, target)] as const)
        .filter(([, reason]) => reason !== undefined)
        .map(([target, reason]) => `${target}: ${reason}`);
      expect(broken).toEqual([]);
    });
});

describe('how anchors are named', () => {
  it('follows GitHub: lowercase, punctuation dropped, spaces as hyphens, repeats numbered', () => {
    expect(slug('Feed cache and its budget')).toBe('feed-cache-and-its-budget');
    expect(slug('Feed serving (api role)')).toBe('feed-serving-api-role');
    expect(slug('The `resync --wait` command')).toBe('the-resync---wait-command');
    expect(slug('University scale: 2,000 to 20,000 sources')).toBe('university-scale-2000-to-20000-sources');
    expect(slug('Timetable engine: expansion + rendering vs ical-generator alone')).toBe(
      'timetable-engine-expansion--rendering-vs-ical-generator-alone',
    );
    expect([...anchors('# A\n## Same\n```\n# not a heading\n```\n## Same\n')]).toEqual(['a', 'same', 'same-1']);
  });

  it('sees a broken link as broken', () => {
    expect(problem('README.md', 'docs/no-such-page.md')).toBe('no such file: docs/no-such-page.md');
    expect(problem('README.md', 'docs/design.md#no-such-heading')).toBe('no heading #no-such-heading');
    expect(problem('README.md', 'https://example.com/')).toBe('leaves the repository');
    expect(problem('docs/design.md', '../../outside.md')).toMatch(/no such file|leaves the repository/);
    expect(problem('README.md', 'docs/design.md#flow')).toBeUndefined();
    expect(linkTargets('see `[x](nowhere.md)` and\n```\n[y](nowhere.md)\n```\n[z](here.md)')).toEqual(['here.md']);
  });
});
