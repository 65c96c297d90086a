/**
 * Text for Telegram's HTML parse mode. Upstream names and user text may hold `<`, `&` or `>`; Telegram refuses a
 * message whose `<` or `&` does not start a tag or an entity, so every such text goes through {@link escapeHtml}.
 * `_`, `*` and `[` mean nothing in HTML mode (they would in Markdown, which is why HTML is the mode used).
 */

const ENTITIES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };

/** `text` as HTML text: `&`, `<`, `>` escaped. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>]/g, (char) => ENTITIES[char] as string);
}

/** `value` inside a double-quoted attribute (`href`): `"` escaped too. */
export function escapeAttribute(value: string): string {
  return value.replace(/[&<>"]/g, (char) => ENTITIES[char] as string);
}

/** A link; `text` is plain text. */
export function link(href: string, text: string): string {
  return `<a href="${escapeAttribute(href)}">${escapeHtml(text)}</a>`;
}

/** Bold plain text. */
export function bold(text: string): string {
  return `<b>${escapeHtml(text)}</b>`;
}
