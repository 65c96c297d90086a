/**
 * The shape scan against the parser tsdav uses (xml-js over sax, strict, reading on past errors): for adversarial
 * and random texts the scan's depth and element counts are never below what sax reaches, so nothing it let
 * through builds more than the limits. And it stays linear on inputs made to make it search.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { elementBudget, MAX_XML_DEPTH, xmlShapeExcess } from '../../src/caldav/xml-shape.ts';

interface SaxParser {
  opt: Record<string, unknown>;
  tags: unknown[];
  onopentag: () => void;
  onerror: () => void;
  write(text: string): SaxParser;
  close(): SaxParser;
}
const sax = createRequire(import.meta.url)('sax') as { parser(strict: boolean, options: object): SaxParser };

/** What sax reaches on `text`, set up as xml-js sets it up: the deepest stack and the elements opened. */
function saxShape(text: string): { depth: number; elements: number } {
  const parser = sax.parser(true, {});
  parser.opt = { strictEntities: true };
  let depth = 0;
  let elements = 0;
  parser.onopentag = () => {
    elements++;
    depth = Math.max(depth, parser.tags.length);
  };
  parser.onerror = () => undefined;
  try {
    parser.write(text).close();
  } catch {
    // sax throws its first error at the end, once everything was read (and built, by xml-js).
  }
  return { depth, elements };
}

/** The scan's verdict is never laxer than sax: it refuses, or its limits hold for what sax reaches. */
function expectNoLaxerThanSax(text: string): void {
  const { depth, elements } = saxShape(text);
  if (depth > 0) {
    const excess = xmlShapeExcess(text, { maxDepth: depth - 1, maxElements: Number.POSITIVE_INFINITY });
    expect(excess, `depth ${depth} of ${JSON.stringify(text.slice(0, 200))}`).toBeDefined();
  }
  if (elements > 0) {
    const excess = xmlShapeExcess(text, { maxDepth: Number.POSITIVE_INFINITY, maxElements: elements - 1 });
    expect(excess, `elements ${elements} of ${JSON.stringify(text.slice(0, 200))}`).toBeDefined();
  }
}

/** A deterministic generator (mulberry32), so that a failure is found again. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// biome-ignore format: a table of tokens
const TOKENS = [
  '<', '>', '/', '!', '?', '-', '--', '[', ']', ']]>', '"', "'", '=', '&', ';', '#', ' ', '\n', 'a', 'b', 'd:a',
  'x', ':', '·', '.', '1', '<a>', '</a>', '<b>', '</b>', '<a/>', '<a x="1">', '< a>', '</ a>', '</a x>', '<!--',
  '-->', '--->', '<![CDATA[', '<![cdata[', '<?', '?>', '??>', 'a="', "a='", 'a=', '&amp;', '&#60;', '&a', '<<',
];

describe('xmlShapeExcess against sax', () => {
  it('counts at least what sax reaches on what the review found, and on hiding places of its own', () => {
    const n = 200;
    const cases = [
      // Quotes read as sax reads them: `x"` is an unquoted value, the `"` opens nothing.
      `<multistatus b=x">${'<a>'.repeat(n)}"/>`,
      // Unterminated quote: sax still opens every element after it? No: they are in the value; the scan agrees.
      `<r a="${'<a>'.repeat(n)}`,
      // Close tags that match nothing open.
      '<a></z>'.repeat(n),
      // A close tag hidden from sax in a quoted value, after `&` or in a comment ending `--->`.
      '<r x="</r>">'.repeat(n),
      '<r>&</r>'.repeat(n),
      '<r>&amp</r>'.repeat(n),
      '<r><!-- ---></r>-->'.repeat(n),
      '<r><? ??></r>?>'.repeat(n),
      '<r x="/>">'.repeat(n),
      '<r x=y/>'.repeat(n),
      '<r/x>'.repeat(n),
      '<r<</r>'.repeat(n),
      '< r></ r >'.repeat(n),
      '<r></r x="y">'.repeat(n),
      '<r></r<r>'.repeat(n),
      '<r><![CDATA[</r>]]>'.repeat(n),
      '<r x="&"></r>">'.repeat(n),
      '<r x=&></r>'.repeat(n),
    ];
    for (const text of cases) expectNoLaxerThanSax(text);
  });

  it('counts at least what sax reaches on 20,000 random texts', () => {
    const next = random(36);
    for (let round = 0; round < 20_000; round++) {
      const length = 1 + Math.floor(next() * 40);
      let text = '';
      for (let k = 0; k < length; k++) text += TOKENS[Math.floor(next() * TOKENS.length)];
      expectNoLaxerThanSax(text);
    }
  });

  it('refuses a document type and any markup declaration but comments and CDATA', () => {
    const limits = { maxDepth: 64, maxElements: 1_000 };
    const declaration = { measure: 'declaration', limit: 0 };
    // sax ends an SGML declaration at its first `>`: the scan read on to `]>` and missed these elements.
    expect(xmlShapeExcess(`<!X [<a${'><a'.repeat(100)}>]>`, limits)).toEqual(declaration);
    expect(xmlShapeExcess('<!DOCTYPE d [<!ENTITY x "y">]><d:multistatus/>', limits)).toEqual(declaration);
    expect(xmlShapeExcess('<?xml version="1.0"?>\n<! DOCTYPE x>', limits)).toEqual(declaration);
    expect(xmlShapeExcess('<a><!-- <!DOCTYPE x> --><![CDATA[<!x>]]></a>', limits)).toBeUndefined();
    expect(xmlShapeExcess('<a x="<!x>"/>', limits)).toBeUndefined();
  });
});

describe('xmlShapeExcess cost', () => {
  const FOUR_MIB = 4 * 1024 * 1024;
  const unlimited = { maxDepth: MAX_XML_DEPTH, maxElements: Number.POSITIVE_INFINITY };

  /** `unit` repeated to 4 MiB. */
  const fill = (unit: string) => unit.repeat(Math.ceil(FOUR_MIB / unit.length));

  it('scans 4 MiB made to make it search in linear time', () => {
    // Each of these made the old scan (or a naive one) search to the end from every position.
    const inputs = [
      fill('<!a>'),
      `<r>${fill('<!-- -')}`,
      `<r>${fill('<? ?')}`,
      `<r a="${fill('&a')}`,
      `<r>${fill('&a')}`,
      `<r>${fill('<a/')}`,
      `<r a=${fill('x')}`,
      `<${fill('a')}`,
      `<r></${fill('r')}`,
      `<r>${fill('</r ')}`,
      `<r>${fill('<![CDATA[')}`,
      `<r>${fill('</a>')}`,
    ];
    for (const text of inputs) {
      const started = performance.now();
      xmlShapeExcess(text, unlimited);
      // Linear: tens of ms here; the quadratic `<!a>` scan took 1.17 s for 1 MiB, so 19 s for 4.
      expect(performance.now() - started, JSON.stringify(text.slice(0, 30))).toBeLessThan(2_000);
    }
  });

  it('lets a real 4 MiB listing through', () => {
    const response =
      '<d:response><d:href>/dav/calendars/alice/timetable/tts-0123456789abcdef.ics</d:href><d:propstat><d:prop>' +
      '<d:getetag>"a1b2c3d4e5"</d:getetag><d:resourcetype/></d:prop><d:status>HTTP/1.1 200 OK</d:status>' +
      '</d:propstat></d:response>\n';
    const count = Math.floor(FOUR_MIB / response.length) - 1;
    const xml = `<?xml version="1.0" encoding="utf-8"?>\n<d:multistatus xmlns:d="DAV:">${response.repeat(count)}</d:multistatus>`;
    expect(xmlShapeExcess(xml, { maxDepth: MAX_XML_DEPTH, maxElements: elementBudget(FOUR_MIB) })).toBeUndefined();
  });
});
