/** Turns a snapshot and its published state into ICS text: the default feed and subscriber variants (pure). */
import { createHash } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Snapshot } from '../store/snapshot-store.ts';
import { GROUP_WORDING, shownSummary } from '../timetable/event-text.ts';
import { compareOccurrences, expand } from '../timetable/expand.ts';
import { publishedClassIds } from '../timetable/merge-rows.ts';
import type { ExpansionSettings, PublishedState } from '../timetable/publication.ts';
import type { StudyPlanNotes } from '../timetable/study-plan.ts';
import {
  type EventWording,
  EXPANSION_RULES,
  type ExpandOptions,
  type Occurrence,
  type SubscriberOptions,
} from '../timetable/types.ts';
import { frozenOccurrences, HistoryMask } from './history.ts';
import { previousOccurrences, tombstonesFor } from './publication-diff.ts';
import { renderIcs } from './render-ics.ts';

/** The settings a feed's content depends on. */
export type FeedSettings = Pick<
  Config,
  'timezone' | 'weekParityAnchors' | 'holidays' | 'refreshIntervalMs' | 'cancelledTitlePrefix'
>;

/** Bumped when the rendering changes in a way stored feeds must pick up. */
const RENDER_VERSION = 1;

/** The X- property that marks a feed serving old data after failed refreshes. */
export const STALE_PROPERTY = 'X-TIMETABLE-STALE';

/**
 * Digest of the settings and the deployment's term starts (configured or inferred): a change makes the next
 * refresh of every feed render it again, which is how a newly inferred term start reaches every feed. A
 * personal timetable's study plan notes are part of it, so that a new plan renders its feed again.
 */
export function settingsHash(
  settings: FeedSettings,
  termStarts: readonly string[],
  studyPlan?: StudyPlanNotes,
  wording: EventWording = GROUP_WORDING,
): string {
  const parts: unknown[] = [
    RENDER_VERSION,
    settings.timezone,
    termStarts,
    settings.holidays,
    settings.refreshIntervalMs,
    settings.cancelledTitlePrefix,
  ];
  // Only when there is one: the digests of feeds without a plan stay what they were.
  if (studyPlan !== undefined) parts.push(studyPlan);
  // Likewise a wording other than a group's (a teacher's): so that a new one renders every teacher's feed again.
  if (!isGroupWording(wording)) parts.push(wording);
  const key = JSON.stringify(parts);
  return createHash('sha256').update(key).digest('base64url').slice(0, 16);
}

/** The settings a new expansion is made with, as plain data a publication records. */
export function expansionSettings(
  settings: FeedSettings,
  termStarts: readonly string[],
  studyPlan?: StudyPlanNotes,
  wording: EventWording = GROUP_WORDING,
): ExpansionSettings {
  return {
    timezone: settings.timezone,
    termStarts: [...termStarts],
    holidays: [...settings.holidays],
    rules: EXPANSION_RULES,
    ...(studyPlan === undefined ? {} : { studyPlan }),
    // Recorded only when it is not a group's: what groups' feeds store stays as it was.
    ...(isGroupWording(wording) ? {} : { wording: { ...wording } }),
  };
}

function isGroupWording(wording: EventWording): boolean {
  return wording.title === GROUP_WORDING.title && wording.teacherLine === GROUP_WORDING.teacherLine;
}

/**
 * What a publication was expanded with. A state stored before rows were merged and term starts inferred recorded
 * nothing: it was expanded with the configured anchors by rules 1, and is re-expanded so, so that the first refresh
 * after an upgrade keeps its past exactly as published. The first version that recorded the settings left out the
 * rules, which were 2.
 */
export function publishedExpansion(published: PublishedState | undefined, settings: FeedSettings): ExpansionSettings {
  if (published === undefined) return expansionSettings(settings, settings.weekParityAnchors);
  if (published.expansion === undefined)
    return { ...expansionSettings(settings, settings.weekParityAnchors), rules: 1 };
  return { ...published.expansion, rules: published.expansion.rules ?? 2 };
}

/** The expansion options of `expansion`, its class ids and the sequences published before. */
export function expandOptions(
  expansion: ExpansionSettings,
  classIds: ReadonlyMap<number, number>,
  published: PublishedState | undefined,
  subscriber?: SubscriberOptions,
): ExpandOptions {
  return {
    timezone: expansion.timezone,
    anchors: expansion.termStarts,
    holidays: expansion.holidays,
    rules: expansion.rules ?? 1,
    classIds,
    studyPlan: expansion.studyPlan,
    wording: expansion.wording,
    previous: previousOccurrences(published),
    ...(subscriber ? { subscriber } : {}),
  };
}

/**
 * Expands a published snapshot as its publication did: with its expansion settings and rules, and its rows
 * merged under the class ids it used, so that variants, Google pushes and the next publication see exactly
 * the occurrences (UIDs, dates, sequences) it published.
 */
export function expandSnapshot(
  snapshot: Pick<Snapshot, 'entries'>,
  published: PublishedState | undefined,
  settings: FeedSettings,
  subscriber?: SubscriberOptions,
): Occurrence[] {
  const classIds = publishedClassIds(snapshot.entries, published?.classIds);
  const options = expandOptions(publishedExpansion(published, settings), classIds, published, subscriber);
  return expand(snapshot.entries, options).occurrences;
}

/** The live occurrences a publication showed: its snapshot expanded as it was, history applied. */
export function shownOccurrences(
  snapshot: Pick<Snapshot, 'entries'>,
  published: PublishedState | undefined,
  settings: FeedSettings,
): Occurrence[] {
  return new HistoryMask(published?.frozen).filter(expandSnapshot(snapshot, published, settings));
}

/** What one feed needs besides its occurrences. */
export interface FeedMeta {
  name: string;
  stamp: number;
  staleSince?: number | undefined;
  alarmMinutes?: number | undefined;
}

/**
 * Renders occurrences as the feed's ICS text, with the stale marker when the data is old and cancelled classes
 * titled as such (`CANCELLED_TITLE_PREFIX`).
 */
export function renderFeed(occurrences: readonly Occurrence[], meta: FeedMeta, settings: FeedSettings): string {
  const prefix = settings.cancelledTitlePrefix;
  const shown = occurrences.map((occurrence) =>
    occurrence.status === 'CANCELLED' ? { ...occurrence, summary: shownSummary(occurrence, prefix) } : occurrence,
  );
  return renderIcs(shown, {
    name: meta.name,
    timezone: settings.timezone,
    refreshIntervalMs: settings.refreshIntervalMs,
    stamp: meta.stamp,
    alarmMinutes: meta.alarmMinutes,
    extra: meta.staleSince === undefined ? undefined : { [STALE_PROPERTY]: new Date(meta.staleSince).toISOString() },
  });
}

/**
 * Everything a feed shows: the snapshot expanded (with a subscriber's options, if any) where its history
 * leaves it, the ended occurrences kept as published, and the cancelled occurrences that subscriber keeps,
 * sorted by start then uid.
 */
export function feedOccurrences(
  snapshot: Pick<Snapshot, 'entries'>,
  published: PublishedState,
  settings: FeedSettings,
  subscriber: SubscriberOptions = {},
): Occurrence[] {
  const live = new HistoryMask(published.frozen).filter(expandSnapshot(snapshot, published, settings, subscriber));
  const kept = frozenOccurrences(published.frozen ?? [], subscriber);
  const cancelled = tombstonesFor(published.tombstones, subscriber);
  return [...live, ...kept, ...cancelled].sort(compareOccurrences);
}

/**
 * A feed as one subscriber asked for it (subgroup, excluded kinds, title template, alarm); also the default
 * feed re-rendered with a stale marker when `subscriber` is empty.
 */
export function renderVariant(
  snapshot: Snapshot,
  published: PublishedState,
  settings: FeedSettings,
  subscriber: SubscriberOptions,
  staleSince?: number,
): string {
  return renderFeed(
    feedOccurrences(snapshot, published, settings, subscriber),
    {
      name: snapshot.name,
      stamp: published.stamp,
      staleSince,
      alarmMinutes: subscriber.alarmMinutes,
    },
    settings,
  );
}
