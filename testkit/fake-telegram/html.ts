/**
 * Telegram's HTML parse mode, as strict as the Bot API: only its tags, only its named entities, every tag closed.
 * Answers the text a user sees (after entity parsing), or the Bot API's "can't parse entities" description.
 */

const TAGS = new Set([
  'b',
  'strong',
  'i',
  'em',
  'u',
  'ins',
  's',
  'strike',
  'del',
  'span',
  'tg-spoiler',
  'a',
  'code',
  'pre',
  'blockquote',
  'tg-emoji',
]);

const NAMED: Readonly<Record<string, string>> = { lt: '<', gt: '>', amp: '&', quot: '"' };

/** The outcome of parsing a message in HTML parse mode. */
export type ParsedHtml = { ok: true; text: string } | { ok: false; description: string };

function byteOffset(html: string, index: number): number {
  return Buffer.byteLength(html.slice(0, index), 'utf8');
}

function fail(reason: string): ParsedHtml {
  return { ok: false, description: `Bad Request: can't parse entities: ${reason}` };
}

/** Decodes `&…;` at `index`; undefined when it is not an entity Telegram knows. */
function entityAt(html: string, index: number): { value: string; length: number } | undefined {
  const match = /^&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z]{2,8});/.exec(html.slice(index, index + 12));
  if (!match) return undefined;
  const name = match[1] as string;
  let value: string | undefined;
  if (name.startsWith('#x')) value = String.fromCodePoint(Number.parseInt(name.slice(2), 16));
  else if (name.startsWith('#')) value = String.fromCodePoint(Number.parseInt(name.slice(1), 10));
  else value = NAMED[name];
  return value === undefined ? undefined : { value, length: match[0].length };
}

/** Parses `html`; the text's length is counted by the caller (Telegram counts UTF-16 code units). */
export function parseHtml(html: string): ParsedHtml {
  const open: string[] = [];
  let text = '';
  let i = 0;
  while (i < html.length) {
    const char = html[i] as string;
    if (char === '&') {
      const entity = entityAt(html, i);
      if (!entity) return fail(`Unsupported HTML entity at byte offset ${byteOffset(html, i)}`);
      text += entity.value;
      i += entity.length;
      continue;
    }
    if (char !== '<') {
      text += char;
      i += 1;
      continue;
    }
    const end = html.indexOf('>', i);
    const match = end < 0 ? null : /^<(\/?)([a-zA-Z][a-zA-Z0-9-]*)(\s[^<>]*)?$/.exec(html.slice(i, end));
    if (!match) return fail(`Unsupported start tag at byte offset ${byteOffset(html, i)}`);
    const [, slash, rawName] = match;
    const name = (rawName as string).toLowerCase();
    if (!TAGS.has(name)) return fail(`Unsupported start tag "${name}" at byte offset ${byteOffset(html, i)}`);
    if (slash === '/') {
      if (open.at(-1) !== name)
        return fail(`Unmatched end tag at byte offset ${byteOffset(html, i)}, expected "</${open.at(-1) ?? ''}>"`);
      open.pop();
    } else {
      open.push(name);
    }
    i = end + 1;
  }
  if (open.length > 0) return fail(`Can't find end tag corresponding to start tag "${open.at(-1)}"`);
  return { ok: true, text };
}
