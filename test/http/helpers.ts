/** An API app on the run's Redis with feeds written straight into the stores (no worker needed). */
import type { FastifyInstance } from 'fastify';
import { expansionSettings, renderVariant, settingsHash } from '../../src/feeds/build-feed.ts';
import { buildApp } from '../../src/http/app.ts';
import type { FeedRouteOptions } from '../../src/http/feed-routes.ts';
import { type Logger, silentLogger } from '../../src/logger.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { encodeFeed, FeedStore, type StoredFeed } from '../../src/store/feed-store.ts';
import { normaliseEntries, type Snapshot } from '../../src/store/snapshot-store.ts';
import { wordingOf } from '../../src/timetable/event-text.ts';
import type { PublishedState } from '../../src/timetable/publication.ts';
import { sourceOf } from '../../src/timetable/source.ts';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { testContext } from '../support/service.ts';
import { entry } from '../timetable/fixtures.ts';

/** A running test app and what it runs on. */
export interface TestApp {
  ctx: ServiceContext;
  app: FastifyInstance;
  close(): Promise<void>;
}

/** Builds the whole API app on a fresh key prefix; the on-demand wait is short unless `feeds` says otherwise. */
export async function startTestApp(
  options: { env?: Record<string, string>; now?: () => number; feeds?: FeedRouteOptions; logger?: Logger } = {},
): Promise<TestApp> {
  const { context, close } = await testContext(options.env ?? {}, {
    ...(options.now ? { now: options.now } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  const app = await buildApp(context, {
    logger: options.logger ?? silentLogger(),
    feeds: { demandWaitMs: 400, ...options.feeds },
  });
  return {
    ctx: context,
    app,
    close: async () => {
      await app.close();
      await close();
    },
  };
}

/** Stores a feed with these bytes for `source` (announced on the feed-updates channel, as the worker does). */
export async function storeFeed(
  ctx: ServiceContext,
  source: string,
  ics: string,
  options: { lastModified?: number; staleSince?: number; announce?: boolean } = {},
): Promise<StoredFeed> {
  const feed = await encodeFeed(ics, options.lastModified ?? Date.UTC(2025, 9, 1, 12, 0, 0), options.staleSince);
  // Unannounced (as if the announcement were lost): nothing then drops a copy the API cached meanwhile.
  const store =
    options.announce === false
      ? new FeedStore(ctx.redis, { ...ctx.keys, feedUpdates: `${ctx.keys.feedUpdates}:nobody` })
      : ctx.feeds;
  await store.write(ctx.redis.multi(), source, feed).exec();
  return feed;
}

/** Three classes on Mondays: one for subgroup 1, one for subgroup 2, one lecture for everybody. */
export const SUBGROUP_ENTRIES: readonly TimetableEntry[] = [
  entry({ id: 1, subjectName: 'Алгебра', kind: 'практика', note: '1 подгруппа', finishDate: '2025-09-29' }),
  entry({
    id: 2,
    subjectName: 'Геометрия',
    kind: 'практика',
    note: '2 подгруппа',
    beginTime: '12:00',
    endTime: '13:30',
    finishDate: '2025-09-29',
  }),
  entry({
    id: 3,
    subjectName: 'История',
    kind: 'лекция',
    beginTime: '14:00',
    endTime: '15:30',
    finishDate: '2025-09-29',
  }),
];

/** Stores a whole timetable (snapshot, published state and default feed) as a refresh would. */
export async function storeTimetable(
  ctx: ServiceContext,
  source: string,
  entries: readonly TimetableEntry[] = SUBGROUP_ENTRIES,
  options: { stamp?: number; staleSince?: number; name?: string } = {},
): Promise<StoredFeed> {
  const stamp = options.stamp ?? Date.UTC(2025, 8, 20, 9, 0, 0);
  const wording = wordingOf(sourceOf(source).kind);
  const normalised = normaliseEntries(entries);
  const snapshot: Snapshot = {
    hash: normalised.hash,
    fetchedAt: stamp,
    name: options.name ?? 'ИВТ-21',
    entries: normalised.entries,
    problems: [],
  };
  const published: PublishedState = {
    stamp,
    snapshotHash: snapshot.hash,
    settingsHash: settingsHash(ctx.config, ctx.config.weekParityAnchors, undefined, wording),
    expansion: expansionSettings(ctx.config, ctx.config.weekParityAnchors, undefined, wording),
    occurrences: {},
    tombstones: [],
  };
  const feed = await encodeFeed(
    renderVariant(snapshot, published, ctx.config, {}, options.staleSince),
    stamp,
    options.staleSince,
  );
  const multi = ctx.redis.multi();
  ctx.snapshots.writeSnapshot(multi, source, snapshot);
  ctx.snapshots.writePublished(multi, source, published);
  await ctx.feeds.write(multi, source, feed).exec();
  return feed;
}

/** A tiny valid calendar whose content is `marker`. */
export function calendar(marker: string): string {
  return ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//test//EN', `X-WR-CALNAME:${marker}`, 'END:VCALENDAR', ''].join(
    '\r\n',
  );
}
