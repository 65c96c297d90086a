/**
 * The readable `/start` payload of a public timetable: everything its page's link says, in the payload itself,
 * so that nothing is stored for it. Telegram allows 64 characters of `A-Za-z0-9_-`:
 *
 * `g4242` (a group), `e17` (a teacher), then `_s<n>` for a subgroup (1–99), then `_x<mask>` for hidden kinds:
 * the bits, in base 36, of the kinds of timetable/kind-codes.ts hidden (bit 0 is `лекция`). `g4242_s1_x5` is group
 * 4242, subgroup 1, lectures and laboratory work hidden. The list only grows at its end, so that a payload
 * read later names the same kinds. A kind not in it (the university may name a new one) cannot be said this
 * way: its link gets a stored payload (store/telegram-chats.ts).
 */
import { KIND_CODES } from '../timetable/kind-codes.ts';
import type { NotifyOptions } from '../timetable/notify-change.ts';
import { parseSource, type SourceKey, sourceKey, sourceOf } from '../timetable/source.ts';

/** Subgroups a readable payload can name (the options form allows fewer). */
const SUBGROUP = /^[1-9]\d?$/;
const PUBLIC = /^([ge])([1-9]\d{0,15})(?:_s([1-9]\d?))?(?:_x([1-9a-z][0-9a-z]{0,9}))?$/;

/**
 * The readable payload of a public source with these (normalised) options (`g4242`, `e17_s2`, `g4242_x5`), or
 * undefined when it needs a stored one (a personal source, a subgroup beyond two digits, a kind not in
 * {@link KIND_CODES}).
 */
export function publicPayload(source: SourceKey, options: NotifyOptions): string | undefined {
  const { kind, id } = sourceOf(source);
  if (kind === 'personal') return undefined;
  const subgroup = options.subgroup === undefined ? '' : `_s${options.subgroup}`;
  if (subgroup !== '' && !SUBGROUP.test(String(options.subgroup))) return undefined;
  let mask = 0;
  for (const hidden of options.excludeKinds ?? []) {
    const bit = KIND_CODES.indexOf(hidden.toLocaleLowerCase('ru'));
    if (bit < 0) return undefined;
    mask |= 1 << bit;
  }
  const kinds = mask === 0 ? '' : `_x${mask.toString(36)}`;
  return `${kind === 'group' ? 'g' : 'e'}${id}${subgroup}${kinds}`;
}

/** The source and options of a readable payload, or undefined when it is not one. */
export function parsePublicPayload(payload: string): { source: SourceKey; options: NotifyOptions } | undefined {
  const match = PUBLIC.exec(payload);
  if (match === null) return undefined;
  const [, letter, id, subgroup, kinds] = match as unknown as [string, 'g' | 'e', string, string?, string?];
  let source: SourceKey;
  try {
    source = sourceKey(parseSource(`${letter === 'g' ? 'group' : 'employee'}:${id}`));
  } catch {
    return undefined;
  }
  const options: NotifyOptions = {};
  if (subgroup !== undefined) options.subgroup = Number(subgroup);
  if (kinds !== undefined) {
    const mask = Number.parseInt(kinds, 36);
    // A bit beyond the list is a payload made by a later version, or by hand: not ours.
    if (!Number.isSafeInteger(mask) || mask >= 2 ** KIND_CODES.length) return undefined;
    const hidden = KIND_CODES.filter((_kind, bit) => (mask & (1 << bit)) !== 0).sort();
    options.excludeKinds = hidden;
  }
  return { source, options };
}
