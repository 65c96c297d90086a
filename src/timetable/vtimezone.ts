import { tzlib_get_ical_block } from 'timezones-ical-library';

const blocks = new Map<string, { tzid: string; text: string } | undefined>();

/** The library's VTIMEZONE for a zone name (aliases resolve to their canonical zone), memoised. */
function lookup(zone: string): { tzid: string; text: string } | undefined {
  if (!blocks.has(zone)) {
    const result = tzlib_get_ical_block(zone);
    const text = Array.isArray(result) ? result[0] : undefined;
    const tzid = text === undefined ? undefined : /\r\nTZID:([^\r\n]+)/.exec(text)?.[1];
    blocks.set(zone, text && tzid ? { tzid, text: text.replace(/\r?\n/g, '\r\n').trim() } : undefined);
  }
  return blocks.get(zone);
}

/**
 * The canonical IANA name of a zone that we can describe in a VTIMEZONE ("europe/moscow" → Europe/Moscow,
 * US/Eastern → America/New_York, UTC → Etc/UTC), or undefined when the zone is unknown. Feeds use this
 * name as TZID, so every TZID has a VTIMEZONE with the same id.
 */
export function canonicalTimeZone(name: string): string | undefined {
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
  return lookup(resolved)?.tzid;
}

/**
 * VTIMEZONE text of a canonical zone, from timezones-ical-library (kept current with the tz database:
 * transitions such as Europe/Volgograd's return to UTC+3 or Asia/Almaty's move to UTC+5 are in it).
 * Throws for a zone without one: a TZID that points at nothing is invalid RFC 5545.
 */
export function vtimezone(zone: string): string {
  const block = lookup(zone);
  if (!block || block.tzid !== zone)
    throw new RangeError(`no VTIMEZONE for time zone "${zone}"; use its canonical IANA name`);
  return block.text;
}
