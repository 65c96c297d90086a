/**
 * Cutting text to a length by characters (code points), never between the two halves of a surrogate pair: a cut
 * by UTF-16 units can leave half an emoji or a rare letter, which a mail's subject or a message then carries as a
 * broken character (or which a strict encoder refuses).
 */

/** The first `max` code points of `text` (all of it when it has no more). */
export function firstCodePoints(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = 0;
  let count = 0;
  while (end < text.length && count < max) {
    const code = text.codePointAt(end) as number;
    end += code > 0xffff ? 2 : 1;
    count += 1;
  }
  return text.slice(0, end);
}

/** `text` when it has at most `max` code points, else its first `max - 1` and «…» (`max` in all). */
export function cutWithEllipsis(text: string, max: number): string {
  const head = firstCodePoints(text, max);
  if (head.length === text.length) return text;
  return `${firstCodePoints(head, Math.max(max - 1, 0))}…`;
}
