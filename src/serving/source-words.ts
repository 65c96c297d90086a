/** How answers name a timetable, in English and in the Russian cases the sentences need. */
import type { Words } from '../lib/words.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';

/** A timetable as the messages name it, in English and in the two Russian cases they need. */
export interface SourceNames {
  en: string;
  /** Accusative: "университет не знает группу 4242". */
  ruAccusative: string;
  /** Genitive: "расписание группы 4242". */
  ruGenitive: string;
}

/**
 * `group 4242`, `employee 17`; a personal source is `this subscription`, never its id, unless `showPersonalId`
 * (a subscription id is no secret; the token of a personal feed URL is).
 */
export function sourceNames(source: SourceKey, showPersonalId = false): SourceNames {
  const { kind, id } = sourceOf(source);
  if (kind === 'group') return { en: `group ${id}`, ruAccusative: `группу ${id}`, ruGenitive: `группы ${id}` };
  if (kind === 'employee')
    return { en: `employee ${id}`, ruAccusative: `преподавателя ${id}`, ruGenitive: `преподавателя ${id}` };
  if (showPersonalId) return { en: `personal ${id}`, ruAccusative: `подписку ${id}`, ruGenitive: `подписки ${id}` };
  return { en: 'this subscription', ruAccusative: 'эту подписку', ruGenitive: 'этой подписки' };
}

/** "group 4242 is not known to the university", with the university's own words when it gave any. */
export function notKnownWords(source: SourceKey, upstreamText: string): Words {
  const names = sourceNames(source);
  const detail = upstreamText === '' ? '' : `: ${upstreamText}`;
  return {
    en: `${names.en} is not known to the university${detail}`,
    ru: `университет не знает ${names.ruAccusative}${detail}`,
  };
}
