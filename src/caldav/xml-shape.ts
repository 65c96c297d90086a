/**
 * A cheap look at the shape of an XML answer before it is parsed: how deep its elements nest and how many there
 * are. tsdav parses a multistatus into one object per element on the main thread (xml-js over sax), so an answer
 * of millions of tiny or nested elements costs seconds and hundreds of MB; a real server's answer nests a dozen
 * levels deep and holds an element per 30 bytes or more. The scan reads the text once, bails out at the first
 * excess, and builds nothing.
 *
 * It reads the text as sax does in strict mode, state for state (sax reads on past every error, so a malformed
 * answer is parsed as far as a well-formed one): a `<` hidden from sax in a quoted attribute value, after an
 * unfinished entity (`&<`) or inside a comment ending `--->` is hidden from the scan too, else an element the
 * scan saw closed could stay open in sax. Where it cannot follow sax cheaply it counts more, never less: a
 * closing tag closes only the element on top (sax may close several), and a self-closing element counts for the
 * depth it reaches for a moment. A document type or any markup declaration other than a comment or CDATA is
 * refused outright: no CalDAV server sends one, and sax reads them differently from XML.
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

/** Where an answer exceeds its limits: the measure and the limit it went past (0 for a declaration). */
export interface XmlShapeExcess {
  measure: 'depth' | 'elements' | 'declaration';
  limit: number;
}

// sax's states (lib/sax.js), those strict mode reaches once doctypes are refused.
const BEGIN = 0;
const BEGIN_WHITESPACE = 1;
const TEXT = 2;
const ENTITY = 3;
const OPEN_WAKA = 4;
const COMMENT = 5;
const COMMENT_ENDING = 6;
const COMMENT_ENDED = 7;
const PROC_INST = 8;
const PROC_INST_ENDING = 9;
const OPEN_TAG = 10;
const OPEN_TAG_SLASH = 11;
const ATTRIB = 12;
const ATTRIB_NAME = 13;
const ATTRIB_NAME_SAW_WHITE = 14;
const ATTRIB_VALUE = 15;
const ATTRIB_VALUE_QUOTED = 16;
const ATTRIB_VALUE_CLOSED = 17;
const ATTRIB_VALUE_UNQUOTED = 18;
const CLOSE_TAG = 19;
const CLOSE_TAG_SAW_WHITE = 20;

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const BANG = 0x21;
const QUESTION = 0x3f;
const AMPERSAND = 0x26;
const SEMICOLON = 0x3b;
const EQUALS = 0x3d;
const DASH = 0x2d;
const QUOTE = 0x22;
const APOSTROPHE = 0x27;
const HASH = 0x23;
const BOM = 0xfeff;

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** sax's `nameStart` (XML's NameStartChar, on UTF-16 code units). */
function isNameStart(c: number): boolean {
  if (c < 0x80) return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x3a || c === 0x5f;
  return (
    (c >= 0xc0 && c <= 0xd6) ||
    (c >= 0xd8 && c <= 0xf6) ||
    (c >= 0xf8 && c <= 0x2ff) ||
    (c >= 0x370 && c <= 0x37d) ||
    (c >= 0x37f && c <= 0x1fff) ||
    (c >= 0x200c && c <= 0x200d) ||
    (c >= 0x2070 && c <= 0x218f) ||
    (c >= 0x2c00 && c <= 0x2fef) ||
    (c >= 0x3001 && c <= 0xd7ff) ||
    (c >= 0xf900 && c <= 0xfdcf) ||
    (c >= 0xfdf0 && c <= 0xfffd)
  );
}

/** sax's `nameBody` (XML's NameChar). */
function isNameBody(c: number): boolean {
  return (
    isNameStart(c) ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x2e ||
    c === DASH ||
    c === 0xb7 ||
    (c >= 0x300 && c <= 0x36f) ||
    (c >= 0x203f && c <= 0x2040)
  );
}

/** sax's test for a CDATA section's opening after `<!` (the same regular expression). */
const CDATA_OPEN = /^\[CDATA\[$/i;
const CDATA_OPEN_LENGTH = 7;

/**
 * The first limit `text` exceeds, or undefined when it keeps to them (or is no XML at all: the parser then says
 * so, cheaply). One pass, constant work per character; the open names it keeps are at most `maxDepth`.
 */
export function xmlShapeExcess(text: string, limits: XmlShapeLimits): XmlShapeExcess | undefined {
  const open: string[] = [];
  let elements = 0;
  let state = BEGIN;
  // The state an entity returns to, the quote of an attribute value, whether an entity has its first character.
  let afterEntity = TEXT;
  let quote = 0;
  let entityStarted = false;
  let nameStart = 0;
  let name = '';
  const length = text.length;

  /** sax's openTag: an element, as deep as the open ones and itself. */
  const openTag = (selfClosing: boolean): XmlShapeExcess | undefined => {
    if (++elements > limits.maxElements) return { measure: 'elements', limit: limits.maxElements };
    if (open.length + 1 > limits.maxDepth) return { measure: 'depth', limit: limits.maxDepth };
    if (!selfClosing) open.push(name);
    return undefined;
  };

  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    switch (state) {
      case BEGIN:
        state = BEGIN_WHITESPACE;
        if (c === BOM) break;
        if (c === LT) state = OPEN_WAKA;
        else if (!isWhitespace(c)) state = TEXT;
        break;
      case BEGIN_WHITESPACE:
        if (c === LT) state = OPEN_WAKA;
        else if (!isWhitespace(c)) state = TEXT;
        break;
      case TEXT: {
        // Text runs to the next `<` or `&`: found without a step per character.
        let at = i;
        while (at < length) {
          const d = text.charCodeAt(at);
          if (d === LT || d === AMPERSAND) break;
          at++;
        }
        i = at;
        if (i >= length) break;
        if (text.charCodeAt(i) === LT) state = OPEN_WAKA;
        else {
          state = ENTITY;
          afterEntity = TEXT;
          entityStarted = false;
        }
        break;
      }
      case ENTITY:
        // A name (with `#`), then `;`; any other character ends it and is taken as text, a `<` included.
        if (c === SEMICOLON) state = afterEntity;
        else if (c === HASH || (entityStarted ? isNameBody(c) : isNameStart(c))) entityStarted = true;
        else state = afterEntity;
        break;
      case OPEN_WAKA:
        if (c === BANG) {
          if (text.startsWith('--', i + 1)) {
            state = COMMENT;
            i += 2;
          } else if (CDATA_OPEN.test(text.slice(i + 1, i + 1 + CDATA_OPEN_LENGTH))) {
            const end = text.indexOf(']]>', i + 1 + CDATA_OPEN_LENGTH);
            if (end === -1) return undefined;
            state = TEXT;
            i = end + 2;
          } else return { measure: 'declaration', limit: 0 };
        } else if (isWhitespace(c)) {
          // sax waits for what comes after `< `.
        } else if (isNameStart(c)) {
          state = OPEN_TAG;
          nameStart = i;
        } else if (c === SLASH) {
          state = CLOSE_TAG;
          nameStart = -1;
        } else if (c === QUESTION) state = PROC_INST;
        else state = TEXT;
        break;
      case COMMENT: {
        const at = text.indexOf('-', i);
        if (at === -1) return undefined;
        i = at;
        state = COMMENT_ENDING;
        break;
      }
      case COMMENT_ENDING:
        state = c === DASH ? COMMENT_ENDED : COMMENT;
        break;
      case COMMENT_ENDED:
        // `--` not followed by `>` is comment again, the character after it included (`--->` ends nothing).
        state = c === GT ? TEXT : COMMENT;
        break;
      case PROC_INST: {
        const at = text.indexOf('?', i);
        if (at === -1) return undefined;
        i = at;
        state = PROC_INST_ENDING;
        break;
      }
      case PROC_INST_ENDING:
        // As with comments, `??>` ends nothing.
        state = c === GT ? TEXT : PROC_INST;
        break;
      case OPEN_TAG:
        if (isNameBody(c)) break;
        name = text.slice(nameStart, i);
        if (c === GT) {
          const excess = openTag(false);
          if (excess) return excess;
          state = TEXT;
        } else state = c === SLASH ? OPEN_TAG_SLASH : ATTRIB;
        break;
      case OPEN_TAG_SLASH:
        if (c === GT) {
          const excess = openTag(true);
          if (excess) return excess;
          state = TEXT;
        } else state = ATTRIB;
        break;
      case ATTRIB:
      case ATTRIB_VALUE_CLOSED:
        if (isWhitespace(c)) state = ATTRIB;
        else if (c === GT) {
          const excess = openTag(false);
          if (excess) return excess;
          state = TEXT;
        } else if (c === SLASH) state = OPEN_TAG_SLASH;
        else if (isNameStart(c)) state = ATTRIB_NAME;
        break;
      case ATTRIB_NAME:
        if (c === EQUALS) state = ATTRIB_VALUE;
        else if (c === GT) {
          const excess = openTag(false);
          if (excess) return excess;
          state = TEXT;
        } else if (isWhitespace(c)) state = ATTRIB_NAME_SAW_WHITE;
        break;
      case ATTRIB_NAME_SAW_WHITE:
        if (c === EQUALS) state = ATTRIB_VALUE;
        else if (isWhitespace(c)) break;
        else if (c === GT) {
          const excess = openTag(false);
          if (excess) return excess;
          state = TEXT;
        } else state = isNameStart(c) ? ATTRIB_NAME : ATTRIB;
        break;
      case ATTRIB_VALUE:
        if (isWhitespace(c)) break;
        if (c === QUOTE || c === APOSTROPHE) {
          quote = c;
          state = ATTRIB_VALUE_QUOTED;
        } else state = ATTRIB_VALUE_UNQUOTED; // this character is the value's first, whatever it is
        break;
      case ATTRIB_VALUE_QUOTED:
        if (c === quote) state = ATTRIB_VALUE_CLOSED;
        else if (c === AMPERSAND) {
          state = ENTITY;
          afterEntity = ATTRIB_VALUE_QUOTED;
          entityStarted = false;
        }
        break;
      case ATTRIB_VALUE_UNQUOTED:
        if (c === GT) {
          const excess = openTag(false);
          if (excess) return excess;
          state = TEXT;
        } else if (isWhitespace(c)) state = ATTRIB;
        else if (c === AMPERSAND) {
          state = ENTITY;
          afterEntity = ATTRIB_VALUE_UNQUOTED;
          entityStarted = false;
        }
        break;
      case CLOSE_TAG:
        if (nameStart === -1) {
          // Before the name, whitespace waits and anything but a name's start is dropped.
          if (isNameStart(c)) nameStart = i;
        } else if (c === GT) {
          closeTag(open, text.slice(nameStart, i));
          state = TEXT;
        } else if (!isNameBody(c)) {
          name = text.slice(nameStart, i);
          state = CLOSE_TAG_SAW_WHITE;
        }
        break;
      case CLOSE_TAG_SAW_WHITE:
        if (c === GT) {
          closeTag(open, name);
          state = TEXT;
        }
        break;
    }
  }
  return undefined;
}

/** Closes the element on top when `name` is its name (sax would also close one further down: never fewer). */
function closeTag(open: string[], name: string): void {
  if (open.length > 0 && open[open.length - 1] === name) open.pop();
}
