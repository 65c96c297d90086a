/**
 * A cheap look at the shape of an XML answer before it is parsed: how deep its elements nest and how many there
 * are. tsdav parses a multistatus into one object per element on the main thread, so an answer of millions of
 * tiny or nested elements costs seconds and hundreds of MB; a real server's answer nests a dozen levels deep
 * and holds an element per 30 bytes or more. The scan reads the text once, bails out at the first excess, and
 * builds nothing.
 */

/** How deep and how many elements an answer may hold. */
export interface XmlShapeLimits {
  maxDepth: number;
  maxElements: number;
}

/** Deeper than any DAV answer nests (a multistatus is about eight levels deep). */
export const MAX_XML_DEPTH = 64;

/**
 * The element budget of an answer of `maxBytes`: one element per 16 bytes. A real answer averages 30 bytes or
 * more per element (`<d:href>…</d:href>` alone is longer); only a hostile one packs `<a/>` after `<a/>`.
 */
export function elementBudget(maxBytes: number): number {
  return Math.max(1_000, Math.floor(maxBytes / 16));
}

/** Where an answer exceeds its limits: the measure and the limit it went past. */
export interface XmlShapeExcess {
  measure: 'depth' | 'elements';
  limit: number;
}

const LT = '<';
const SLASH = 0x2f;
const BANG = 0x21;
const QUESTION = 0x3f;
const GT = 0x3e;
const QUOTE = 0x22;
const APOSTROPHE = 0x27;

/** The index just past the `>` that ends the tag opened at `start`, quotes respected; -1 when there is none. */
function tagEnd(text: string, start: number): number {
  let quote = 0;
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (quote !== 0) {
      if (c === quote) quote = 0;
    } else if (c === QUOTE || c === APOSTROPHE) quote = c;
    else if (c === GT) return i + 1;
  }
  return -1;
}

/** The index just past `end` after `from`, or -1. */
function pastMarker(text: string, from: number, end: string): number {
  const at = text.indexOf(end, from);
  return at === -1 ? -1 : at + end.length;
}

/** Where a markup declaration, comment, CDATA section or processing instruction opened at `i` ends. */
function pastSpecial(text: string, i: number): number {
  if (text.startsWith('<!--', i)) return pastMarker(text, i + 4, '-->');
  if (text.startsWith('<![CDATA[', i)) return pastMarker(text, i + 9, ']]>');
  if (text.charCodeAt(i + 1) === QUESTION) return pastMarker(text, i + 2, '?>');
  // A DOCTYPE (with its internal subset, if any): entities are never expanded, and nothing nests in it.
  const subset = text.indexOf('[', i);
  const close = text.indexOf('>', i);
  if (subset !== -1 && close !== -1 && subset < close) return pastMarker(text, subset, ']>');
  return close === -1 ? -1 : close + 1;
}

/**
 * The first limit `text` exceeds, or undefined when it keeps to them (or is no XML at all: the parser then says
 * so, cheaply). Linear in the text's length.
 */
export function xmlShapeExcess(text: string, limits: XmlShapeLimits): XmlShapeExcess | undefined {
  let depth = 0;
  let elements = 0;
  let i = text.indexOf(LT);
  while (i !== -1) {
    const next = text.charCodeAt(i + 1);
    let end: number;
    if (next === SLASH) {
      depth = Math.max(0, depth - 1);
      end = i + 2;
    } else if (next === BANG || next === QUESTION) {
      end = pastSpecial(text, i);
    } else {
      end = tagEnd(text, i);
      elements++;
      if (elements > limits.maxElements) return { measure: 'elements', limit: limits.maxElements };
      const selfClosing = end !== -1 && text.charCodeAt(end - 2) === SLASH;
      if (!selfClosing && ++depth > limits.maxDepth) return { measure: 'depth', limit: limits.maxDepth };
    }
    if (end === -1) return undefined;
    i = text.indexOf(LT, end);
  }
  return undefined;
}
