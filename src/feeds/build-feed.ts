/** Turns a snapshot and its published state into ICS text: the default feed and subscriber variants (pure). */
import { createHash } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Snapshot } from '../sources/snapshot-store.ts';
import { shownSummary } from '../timetable/event-text.ts';
import { compareOccurrences, expand } from '../timetable/expand.ts';
import type { Occurrence, SubscriberOptions } from '../timetable/types.ts';
import { type ExpansionSettings, frozenOccurrences, HistoryMask } from './history.ts';
import { type PublishedState, previousOccurrences, tombstonesFor } from './plan-publication.ts';
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
 * refresh of every feed render it again, which is how a newly inferred term start reaches every feed.
 */
export function settingsHash(settings: FeedSettings, termStarts: readonly string[]): string {
  const key = JSON.stringify([
    RENDER_VERSION,
    settings.timezone,
    termStarts,
    settings.holidays,
    settings.refreshIntervalMs,
    settings.cancelledTitlePrefix,
  ]);
  return createHash('sha256').update(key).digest('base64url').slice(0, 16);
}

/** The settings an expansion is made with, as plain data a publication records. */
export function expansionSettings(settings: FeedSettings, termStarts: readonly string[]): ExpansionSettings {
  return { timezone: settings.timezone, termStarts: [...termStarts], holidays: [...settings.holidays] };
}

/**
 * Expands a snapshot against what was published, so that sequences rise only for changed occurrences. The
 * expansion settings (zone, term starts, holidays) are those the publication used, unless a new publication
 * passes its own; a state stored before they were recorded expands with the configured ones.
 */
export function expandSnapshot(
  snapshot: Pick<Snapshot, 'entries'>,
  published: PublishedState | undefined,
  settings: FeedSettings,
  subscriber?: SubscriberOptions,
  expansion: ExpansionSettings = published?.expansion ?? expansionSettings(settings, settings.weekParityAnchors),
): Occurrence[] {
  return expand(snapshot.entries, {
    timezone: expansion.timezone,
    anchors: expansion.termStarts,
    holidays: expansion.holidays,
    previous: previousOccurrences(published),
    ...(subscriber ? { subscriber } : {}),
  }).occurrences;
}

/** The live occurrences a publication showed: its snapshot expanded with its own settings, history applied. */
export function shownOccurrences(
  snapshot: Pick<Snapshot, 'entries'>,
  published: PublishedState | undefined,
  settings: FeedSettings,
): Occurrence[] {
  const live = expandSnapshot(snapshot, published, settings, undefined, published?.expansion);
  return new HistoryMask(published?.frozen).filter(live);
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
