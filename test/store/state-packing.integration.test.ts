/**
 * An upgrade from the release that stored state as plain JSON: a Redis filled by it keeps serving, its
 * digests and sequences compare as before (a changed class raises only its own SEQUENCE), and the one-time
 * packing rewrites what is left in the old form.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RefreshJobResult } from '../../src/jobs/contract.ts';
import { isPacked } from '../../src/lib/packed-json.ts';
import { packLegacyState } from '../../src/store/state-packing.ts';
import type { SourceKey } from '../../src/timetable/source.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';

let pipeline: Pipeline;

beforeAll(async () => {
  pipeline = await startPipeline();
});
afterAll(async () => {
  await pipeline?.close();
});

/** Rewrites the source's state as the release before packing stored it. */
async function storeAsBefore(source: SourceKey): Promise<void> {
  const { ctx } = pipeline;
  const { snapshot, published } = await ctx.snapshots.load(source);
  const changes = await ctx.snapshots.changes(source);
  await ctx.redis.set(ctx.keys.snapshot(source), JSON.stringify(snapshot));
  await ctx.redis.set(ctx.keys.published(source), JSON.stringify(published));
  await ctx.redis.del(ctx.keys.changes(source));
  for (const change of changes.reverse()) await ctx.redis.lpush(ctx.keys.changes(source), JSON.stringify(change));
}

it('keeps the digests and sequences of a Redis filled by the previous format, then packs it', async () => {
  const { ctx } = pipeline;
  const group = (await pipeline.sim.groups()).find((candidate) => candidate.entryCount >= 8);
  if (!group) throw new Error('no group with enough entries');
  const source: SourceKey = `group:${group.id}`;
  expect(((await pipeline.refresh(source)).result as RefreshJobResult).outcome).toBe('published');
  await storeAsBefore(source);
  expect(isPacked((await ctx.redis.getBuffer(ctx.keys.published(source))) ?? Buffer.from([0, 1]))).toBe(false);
  const before = (await ctx.snapshots.load(source)).published;
  const etag = (await ctx.feeds.get(source))?.etag;

  expect(((await pipeline.refresh(source)).result as RefreshJobResult).outcome).toBe('unchanged');
  expect((await ctx.feeds.get(source))?.etag).toBe(etag);

  // One class moves to another room: only its occurrences change, as they would have before the upgrade.
  const entry = (await ctx.upstream.groupSchedule(group.id)).entries.find(
    (candidate) => candidate.finishDate > '2025-10-15' && candidate.startDate < '2025-09-20',
  );
  if (!entry) throw new Error('no entry with past and future classes');
  await pipeline.sim.raw(`/_sim/entries/${entry.id}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ num_auditorium_schedule: '999' }),
  });
  expect(((await pipeline.refresh(source)).result as RefreshJobResult).outcome).toBe('published');
  const after = (await ctx.snapshots.load(source)).published;
  const raised = Object.entries(after?.occurrences ?? {}).filter(
    ([uid, occurrence]) => occurrence.sequence !== before?.occurrences[uid]?.sequence,
  );
  expect(raised.length).toBeGreaterThan(0);
  expect(raised.every(([uid]) => uid.startsWith(`${entry.id}-`))).toBe(true);
  const [change, first] = await ctx.snapshots.changes(source);
  expect(change?.counts.moved).toBe(raised.length);
  expect(first?.counts.added).toBeGreaterThan(0);

  // The publication packed its snapshot and state; the first change record is the one value left to pack. (The
  // workers packed this empty Redis when they started: as on an upgrade, the packing has not run yet.)
  await ctx.redis.del(ctx.keys.statePacked);
  expect((await packLegacyState(ctx.redis, ctx.keys)).packed).toBe(1);
  const items = await ctx.redis.lrangeBuffer(ctx.keys.changes(source), 0, -1);
  expect(items.map((item) => isPacked(item))).toEqual([true, true]);
  expect((await ctx.snapshots.changes(source))[1]).toEqual(first);
});
