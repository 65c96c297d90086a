/**
 * Subscriber options with their canonical text, the key of a feed variant: equal options, equal text. The
 * options of a feed URL are parsed by http/subscriber-query.ts; saved ones are valid already.
 */
import type { SubscriberOptions } from '../timetable/types.ts';

/** Options parsed from a query, and their canonical text: equal options, equal text (the variant cache key). */
export interface ParsedSubscriberQuery {
  options: SubscriberOptions;
  /** Empty when the URL asks for no option: the default feed is served. */
  canonical: string;
}

/** Options already validated (saved ones) with their canonical text, as a parsed query would have them. */
export function subscriberQueryOf(options: SubscriberOptions): ParsedSubscriberQuery {
  return { options, canonical: canonicalOf(options) };
}

/** The canonical text of `options`: empty for none (the default feed). */
function canonicalOf(options: SubscriberOptions): string {
  if (Object.keys(options).length === 0) return '';
  return JSON.stringify([
    options.subgroup ?? null,
    options.excludeKinds ?? [],
    options.alarmMinutes ?? null,
    options.titleTemplate ?? null,
  ]);
}
