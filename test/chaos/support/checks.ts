/**
 * How every chaos scenario ends: the feeds the api serves equal what the upstream says now (its timetable
 * fetched again and expanded by the service's own pipeline, read back from the ICS by ical.js), each Google
 * calendar in the fake holds exactly the desired events (none missing, none extra, none stale), and nothing
 * stored was lost (subscriptions, feed tokens, targets, snapshots counted before and after).
 */

import { feedOccurrences, STALE_PROPERTY } from '../../../src/feeds/build-feed.ts';
import { desiredEvents } from '../../../src/push/desired-events.ts';
import { normaliseEntries } from '../../../src/store/snapshot-store.ts';
import type { SourceKey } from '../../../src/timetable/source.ts';
import type { Occurrence } from '../../../src/timetable/types.ts';
import { calendarState, mismatches } from '../../../testkit/calendar-diff.ts';
import { until } from '../../../testkit/poll.ts';
import { rawRequest } from '../../../testkit/processes.ts';
import { readEvents } from '../../jobs/helpers.ts';
import type { Rig } from './rig.ts';

/** What stored things the rig has: counted before a fault and after recovery. */
export interface StoredCounts {
  subscriptions: number;
  feedTokens: number;
  targets: number;
  snapshots: number;
}

/** The outcome of one check of everything. */
export interface Verdict {
  /** Sources whose served feed differs from the upstream (or could not be read), with why. */
  feeds: string[];
  /** Feeds served with the stale marker. */
  stale: number;
  /** Calendars that differ from the desired events, with how many events are wrong. */
  calendars: string[];
}

/** True when nothing differs. */
export const exact = (verdict: Verdict): boolean =>
  verdict.feeds.length === 0 && verdict.stale === 0 && verdict.calendars.length === 0;

/** The feed occurrences a source should have now: the upstream fetched again, expanded as the service does. */
async function expectedOccurrences(rig: Rig, source: SourceKey): Promise<Occurrence[]> {
  const [kind, id] = source.split(':');
  const fetched =
    kind === 'group'
      ? await rig.ctx.upstream.groupSchedule(Number(id))
      : await rig.ctx.upstream.mySchedule(rig.subscriptions.find((s) => s.source === source)?.credential ?? '');
  const { published } = await rig.ctx.snapshots.load(source);
  if (!published) throw new Error(`${source} was never published`);
  return feedOccurrences({ entries: normaliseEntries(fetched.entries).entries }, published, rig.ctx.config);
}

/** An event as compared: uid, start instant, status and title. */
const line = (uid: string, start: string, status: string | undefined, summary: string) =>
  `${uid} ${start} ${status ?? 'CONFIRMED'} ${summary}`;

/** Compares the served feed of `source` with the expected occurrences; answers why it differs, if it does. */
async function checkFeed(
  rig: Rig,
  source: SourceKey,
  expected: Occurrence[],
): Promise<{ diff?: string; stale: boolean }> {
  const answer = await rawRequest(rig.feedUrl(source)).catch((error: unknown) => ({ status: 0, body: String(error) }));
  if (answer.status !== 200) return { diff: `${source}: answered ${answer.status}`, stale: false };
  const ics = answer.body.toString();
  const prefix = rig.ctx.config.cancelledTitlePrefix;
  const served = readEvents(ics)
    .map((event) => line(event.uid, event.start, event.status, event.summary))
    .sort();
  const wanted = expected
    .map((occurrence) =>
      line(
        occurrence.uid,
        new Date(occurrence.startUtc).toISOString(),
        occurrence.status,
        occurrence.status === 'CANCELLED' ? prefix + occurrence.summary : occurrence.summary,
      ),
    )
    .sort();
  const servedSet = new Set(served);
  const wantedSet = new Set(wanted);
  const missing = wanted.filter((event) => !servedSet.has(event)).length;
  const extra = served.filter((event) => !wantedSet.has(event)).length;
  const stale = ics.includes(STALE_PROPERTY);
  return missing + extra === 0 ? { stale } : { diff: `${source}: ${missing} missing, ${extra} extra`, stale };
}

/** Checks every feed and calendar once. */
export async function verify(rig: Rig): Promise<Verdict> {
  const verdict: Verdict = { feeds: [], stale: 0, calendars: [] };
  const expectedBySource = new Map<SourceKey, Occurrence[]>();
  for (const source of rig.allSources()) {
    const expected = await expectedOccurrences(rig, source);
    expectedBySource.set(source, expected);
    const { diff, stale } = await checkFeed(rig, source, expected);
    if (diff) verdict.feeds.push(diff);
    if (stale) verdict.stale += 1;
  }
  for (const target of rig.targets) {
    const desired = desiredEvents(expectedBySource.get(target.source) ?? [], rig.ctx.config.cancelledTitlePrefix);
    const state = calendarState(rig.fake, target.calendarId, target.source);
    const wrong = mismatches(state, desired);
    // Events without our marker would be ours too here (nobody else writes to these calendars).
    const unmarked = rig.fake.events(target.calendarId).length - state.size;
    if (wrong + unmarked > 0) verdict.calendars.push(`${target.calendarId}: ${wrong} wrong, ${unmarked} unmarked`);
  }
  return verdict;
}

/**
 * Waits until everything is exact (the service recovering by itself), checking again every 2 s; answers the
 * last verdict and how long it took. Upstream reads of the check itself go through the service's own client.
 */
export async function converge(rig: Rig, timeoutMs = 120_000): Promise<{ verdict: Verdict; ms: number }> {
  const started = Date.now();
  const verdict = await until(
    async () => {
      const seen = await verify(rig).catch(
        (error: unknown): Verdict => ({ feeds: [`check failed: ${String(error)}`], stale: 0, calendars: [] }),
      );
      if (!exact(seen)) await new Promise((wake) => setTimeout(wake, 2_000));
      return seen;
    },
    exact,
    timeoutMs,
  );
  return { verdict, ms: Date.now() - started };
}

/** Counts the stored things by their keys. */
export async function storedCounts(rig: Rig): Promise<StoredCounts> {
  const { keys, redis } = rig.ctx;
  const count = async (pattern: string) => {
    let total = 0;
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      total += found.length;
    } while (cursor !== '0');
    return total;
  };
  return {
    subscriptions: await count(keys.subscription('*')),
    feedTokens: await count(keys.subscriptionToken('*')),
    targets: await count(keys.googleTarget('*')),
    snapshots: await count(keys.snapshot('*' as SourceKey)),
  };
}

/** Duplicate-insert attempts the fake refused (409), and all requests it answered with an error. */
export function googleErrors(rig: Rig): { duplicates: number; errors: Record<string, number> } {
  const { errors } = rig.fake.counts();
  const duplicates = Object.entries(errors)
    .filter(([name]) => name.startsWith('409'))
    .reduce((sum, [, n]) => sum + n, 0);
  return { duplicates, errors };
}

/** Prints a scenario's one-line outcome (the suite's output, and the figures of docs/RELIABILITY.md). */
export function outcome(scenario: string, figures: Record<string, unknown>): void {
  const text = Object.entries(figures)
    .map(([name, value]) => `${name}=${typeof value === 'object' ? JSON.stringify(value) : String(value)}`)
    .join(' ');
  console.log(`CHAOS ${scenario}: ${text}`);
}
