/**
 * Response bodies as text, in the charset they are written in. Older deployments answer windows-1251 (most
 * say so in `Content-Type`, some do not); reading those bytes as UTF-8 gives mojibake that nothing downstream
 * can detect. Node's full ICU decodes windows-1251 with the WHATWG `TextDecoder`, so no dependency is needed.
 */
import { TextDecoder } from 'node:util';

/** The charset assumed for bytes that are not UTF-8 and name no charset of their own. */
export const FALLBACK_CHARSET = 'windows-1251';

/** Text decoded from bytes, and why the fallback charset was used, when it was. */
export interface DecodedText {
  text: string;
  /** Set when the bytes were read as windows-1251 without being labelled so: worth a warning. */
  fallback?: string;
}

/** The `charset` parameter of a `Content-Type` value, lower-cased; undefined when there is none. */
export function charsetOf(contentType: string | string[] | undefined): string | undefined {
  const value = Array.isArray(contentType) ? contentType[0] : contentType;
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(value ?? '');
  // Cut: the label is the upstream's text and may end up in a log line.
  return match?.[1]?.toLowerCase().slice(0, 40);
}

function decoderFor(label: string): TextDecoder | undefined {
  try {
    return new TextDecoder(label);
  } catch {
    // RangeError: a label the WHATWG encoding standard does not know.
    return undefined;
  }
}

/** UTF-8 (a leading BOM dropped), or undefined when the bytes are not valid UTF-8. */
function strictUtf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Decodes a body. A charset the `Content-Type` names is used as named, except that bytes labelled UTF-8
 * (or not labelled at all, or labelled with a charset nobody knows) which are not valid UTF-8 are read as
 * windows-1251, since replacement characters would lose every Cyrillic letter; `fallback` then says why.
 */
export function decodeBody(bytes: Uint8Array, charset: string | undefined): DecodedText {
  const named = charset === undefined ? undefined : decoderFor(charset);
  if (named !== undefined && named.encoding !== 'utf-8') return { text: named.decode(bytes) };
  const utf8 = strictUtf8(bytes);
  if (utf8 !== undefined) return { text: utf8 };
  const reason =
    charset === undefined
      ? 'not valid UTF-8 and no charset named'
      : named === undefined
        ? `unknown charset "${charset}" and not valid UTF-8`
        : `labelled ${charset} but not valid UTF-8`;
  return { text: new TextDecoder(FALLBACK_CHARSET).decode(bytes), fallback: reason };
}
