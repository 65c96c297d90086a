/**
 * RFC 5545 §3.1 line folding: a content line longer than 75 octets is split, each continuation starting with
 * a space. The output is byte for byte what ical-generator's `foldLines` gives, which the stored feeds and
 * their ETags were made with; it is only cheaper. ical-generator splits the text into lines and builds every
 * line that is not short ASCII again one character at a time, and a Russian timetable has such lines in
 * every event (title, place, notes): that was half of rendering a feed's events, and rendering was the
 * largest cost of a first refresh cycle. Here one pass counts octets and copies the text in slices.
 */

/** Octets of content a line may carry before a fold: 75 less the space that starts a continuation. */
const MAX_OCTETS = 74;

const CR = 0x0d;
const LF = 0x0a;

/** Folds every line of `text` (CRLF-separated) longer than the limit. */
export function foldLines(text: string): string {
  let folded = '';
  // Start of the text not yet copied to `folded`.
  let copied = 0;
  let octets = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code === CR && text.charCodeAt(index + 1) === LF) {
      index += 1;
      octets = 0;
      continue;
    }
    const character = index;
    let size = 3;
    if (code < 0x80) size = 1;
    else if (code < 0x800) size = 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      // A high surrogate and the unit after it are one character of 4 octets, as ical-generator counts them;
      // one that ends its line (a lone surrogate) counts 4 all the same.
      size = 4;
      if (!endsLine(text, index + 1)) index += 1;
    }
    octets += size;
    if (octets > MAX_OCTETS) {
      folded += `${text.slice(copied, character)}\r\n `;
      copied = character;
      octets = size;
    }
  }
  return folded + text.slice(copied);
}

function endsLine(text: string, index: number): boolean {
  return index >= text.length || (text.charCodeAt(index) === CR && text.charCodeAt(index + 1) === LF);
}
