/**
 * The per-source state on a real Redis: snapshots, published states, change records and study plans are stored
 * packed and read back equal; values stored as plain JSON by earlier releases are read too, and the one-time
 * packing rewrites them in place.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPacked, unpackJson } from '../../src/lib/packed-json.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { CHANGE_RECORD_BYTES } from '../../src/store/change-bounds.ts';
import type { Snapshot } from '../../src/store/snapshot-store.ts';
import { packLegacyState } from '../../src/store/state-packing.ts';
import { type StoredStudyPlan, StudyPlanStore } from '../../src/store/study-plan-store.ts';
import type { ChangeRecord, OccurrenceBrief, PublishedState } from '../../src/timetable/publication.ts';
import type { SourceKey } from '../../src/timetable/source.ts';
import { testContext } from '../support/service.ts';
import { entry } from '../timetable/fixtures.ts';

let ctx: ServiceContext;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ context: ctx, close } = await testContext());
});
afterAll(async () => close?.());

function snapshot(name: string): Snapshot {
  return {
    hash: `hash-${name}`,
    fetchedAt: 1_000,
    name,
    entries: [1, 2, 3, 4, 5].map((id) => entry({ id, room: `${300 + id}` })),
    problems: [],
  };
}

function published(stamp: number): PublishedState {
  const occurrences: PublishedState['occurrences'] = {};
  for (let day = 1; day <= 60; day += 1)
    occurrences[`${205_000 + day}-202609${String(1 + (day % 28)).padStart(2, '0')}@timetable-sync`] = {
      hash: (day * 0x9e3779b1).toString(16).padStart(16, '0').slice(-16),
      sequence: day % 3,
    };
  return {
    stamp,
    snapshotHash: 'T-s7L6JykieD93mJlnwywk',
    settingsHash: 'Usx0jYw8EiD4uKgU',
    occurrences,
    tombstones: [],
  };
}

function brief(index: number): OccurrenceBrief {
  return {
    uid: `${205_000 + index}-20260901@timetable-sync`,
    date: '2026-09-01',
    begin: '10:10',
    end: '11:40',
    summary: `Численные методы ${index}`,
    location: `Учебное здание № 14, ${(index * 7919) % 1000}`,
  };
}

function change(at: number, added: number): ChangeRecord {
  const briefs = Array.from({ length: Math.min(added, 50) }, (_, index) => brief(index));
  return {
    at,
    counts: { added, removed: 0, moved: 0, changed: 0 },
    added: briefs,
    removed: [],
    moved: [],
    changed: [],
  };
}

const plan: StoredStudyPlan = {
  fetchedAt: 5_000,
  attemptedAt: 5_000,
  failure: null,
  subjects: [
    {
      semester: 5,
      subjectId: 12,
      name: 'Численные методы',
      code: 'Б1.В.05',
      exam: true,
      quiz: false,
      hours: { lecture: 36, practice: 18, seminar: 0, laboratory: 18 },
    },
  ],
};

async function raw(key: string): Promise<Buffer> {
  const bytes = await ctx.redis.getBuffer(key);
  if (bytes === null) throw new Error(`no value at ${key}`);
  return bytes;
}

/** Stores the state of `source` as the release before packing did: JSON text, and a LIST of JSON texts. */
async function storeAsBefore(on: ServiceContext, source: SourceKey, changes: ChangeRecord[]): Promise<void> {
  await on.redis.set(on.keys.snapshot(source), JSON.stringify(snapshot(source)));
  await on.redis.set(on.keys.published(source), JSON.stringify(published(7)));
  for (const record of changes) await on.redis.lpush(on.keys.changes(source), JSON.stringify(record));
}

describe('snapshot store', () => {
  it('stores a snapshot, a published state and change records packed, and reads them back', async () => {
    const source: SourceKey = 'group:11';
    const multi = ctx.redis.multi();
    ctx.snapshots.writeSnapshot(multi, source, snapshot('ПМИ-31'));
    ctx.snapshots.writePublished(multi, source, published(2_000));
    ctx.snapshots.appendChange(multi, source, change(2_000, 3));
    await multi.exec();
    expect(await ctx.snapshots.load(source)).toEqual({ snapshot: snapshot('ПМИ-31'), published: published(2_000) });
    expect(await ctx.snapshots.snapshot(source)).toEqual(snapshot('ПМИ-31'));
    expect(await ctx.snapshots.changes(source)).toEqual([change(2_000, 3)]);

    const stored = await raw(ctx.keys.published(source));
    expect(isPacked(stored)).toBe(true);
    expect(stored.length * 3).toBeLessThan(JSON.stringify(published(2_000)).length);
    expect(isPacked(await raw(ctx.keys.snapshot(source)))).toBe(true);
    const [item] = await ctx.redis.lrangeBuffer(ctx.keys.changes(source), 0, -1);
    expect(item && isPacked(item)).toBe(true);
  });

  it('keeps each change record within its bytes, with exact counts, and the newest 20', async () => {
    const source: SourceKey = 'group:12';
    const large: ChangeRecord = {
      ...change(3_000, 400),
      counts: { added: 400, removed: 50, moved: 50, changed: 50 },
      removed: Array.from({ length: 50 }, (_, index) => brief(index + 1_000)),
      moved: Array.from({ length: 50 }, (_, index) => ({ before: brief(index + 2_000), after: brief(index + 3_000) })),
      changed: Array.from({ length: 50 }, (_, index) => ({
        before: brief(index + 4_000),
        after: brief(index + 5_000),
      })),
    };
    for (let at = 1; at <= 21; at += 1)
      await ctx.snapshots.appendChange(ctx.redis.multi(), source, change(at, 1)).exec();
    await ctx.snapshots.appendChange(ctx.redis.multi(), source, large).exec();
    const items = await ctx.redis.lrangeBuffer(ctx.keys.changes(source), 0, -1);
    expect(items).toHaveLength(20);
    expect(items[0]?.length).toBeLessThanOrEqual(CHANGE_RECORD_BYTES);
    const [newest, ...older] = await ctx.snapshots.changes(source);
    expect(newest?.counts).toEqual(large.counts);
    expect(newest?.added.length).toBeLessThan(50);
    expect(newest?.added).toEqual(large.added.slice(0, newest?.added.length));
    expect(older.map((record) => record.at)).toEqual([
      21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3,
    ]);
  });

  it('reads the plain JSON an earlier release stored, old and new records mixed in one log', async () => {
    const source: SourceKey = 'employee:13';
    await storeAsBefore(ctx, source, [change(1, 1), change(2, 2)]);
    await ctx.snapshots.appendChange(ctx.redis.multi(), source, change(3, 3)).exec();
    expect(await ctx.snapshots.load(source)).toEqual({ snapshot: snapshot(source), published: published(7) });
    expect(await ctx.snapshots.snapshot(source)).toEqual(snapshot(source));
    expect(await ctx.snapshots.changes(source)).toEqual([change(3, 3), change(2, 2), change(1, 1)]);
  });
});

describe('study plan store', () => {
  it('stores a plan packed and reads the plain JSON of an earlier release', async () => {
    const plans = new StudyPlanStore(ctx.redis, ctx.keys);
    const source: SourceKey = 'personal:aaaaaaaaaaaaaaaaaaaaaa';
    await plans.saveFailure(source, plan, { at: 6_000, kind: 'timeout', message: 'no answer in 10 s' });
    const failed: StoredStudyPlan = {
      ...plan,
      attemptedAt: 6_000,
      failure: { at: 6_000, kind: 'timeout', message: 'no answer in 10 s' },
    };
    expect(isPacked(await raw(ctx.keys.studyPlan(source)))).toBe(true);
    expect(await plans.load(source)).toEqual(failed);

    await ctx.redis.set(ctx.keys.studyPlan(source), JSON.stringify(plan));
    expect(await plans.load(source)).toEqual(plan);
  });
});

describe('packing the state of an earlier release', () => {
  it('rewrites every plain JSON value packed, once, leaving packed ones and their readings alone', async () => {
    const { context: fresh, close: closeFresh } = await testContext();
    try {
      const before: SourceKey[] = ['group:21', 'group:22', 'employee:23'];
      for (const source of before) await storeAsBefore(fresh, source, [change(1, 1), change(2, 60)]);
      const plans = new StudyPlanStore(fresh.redis, fresh.keys);
      await fresh.redis.set(fresh.keys.studyPlan('personal:bbbbbbbbbbbbbbbbbbbbbb'), JSON.stringify(plan));
      // A source published by this release: already packed.
      const multi = fresh.redis.multi();
      fresh.snapshots.writeSnapshot(multi, 'group:24', snapshot('group:24'));
      fresh.snapshots.appendChange(multi, 'group:24', change(4, 4));
      await multi.exec();
      const readings = await Promise.all(
        [...before, 'group:24' as SourceKey].map(async (source) => ({
          ...(await fresh.snapshots.load(source)),
          changes: await fresh.snapshots.changes(source),
        })),
      );

      // Per source: snapshot, published state and two change records; and the plan.
      expect((await packLegacyState(fresh.redis, fresh.keys)).packed).toBe(before.length * 4 + 1);
      const after = await Promise.all(
        [...before, 'group:24' as SourceKey].map(async (source) => ({
          ...(await fresh.snapshots.load(source)),
          changes: await fresh.snapshots.changes(source),
        })),
      );
      expect(after).toEqual(readings);
      expect(await plans.load('personal:bbbbbbbbbbbbbbbbbbbbbb')).toEqual(plan);
      for (const source of before) {
        for (const key of [fresh.keys.snapshot(source), fresh.keys.published(source)])
          expect(isPacked((await fresh.redis.getBuffer(key)) ?? Buffer.from('{}')), key).toBe(true);
        const items = await fresh.redis.lrangeBuffer(fresh.keys.changes(source), 0, -1);
        expect(items.every((item) => isPacked(item))).toBe(true);
        expect(unpackJson<ChangeRecord>(items[0] ?? Buffer.from('{}')).counts.added).toBe(60);
      }
      expect(
        isPacked(
          (await fresh.redis.getBuffer(fresh.keys.studyPlan('personal:bbbbbbbbbbbbbbbbbbbbbb'))) ?? Buffer.from('{}'),
        ),
      ).toBe(true);

      // Done once: a later start finds the marker and reads nothing.
      await storeAsBefore(fresh, 'group:25', [change(5, 5)]);
      expect(await packLegacyState(fresh.redis, fresh.keys)).toEqual({ packed: 0, unreadable: [], ran: false });
      expect(isPacked((await fresh.redis.getBuffer(fresh.keys.snapshot('group:25'))) ?? Buffer.from('{}'))).toBe(false);
    } finally {
      await closeFresh();
    }
  });

  it('leaves a value in neither form alone, packs the rest, and looks again at the next start', async () => {
    const { context: fresh, close: closeFresh } = await testContext();
    try {
      await storeAsBefore(fresh, 'group:31', [change(1, 1)]);
      const broken = fresh.keys.snapshot('group:32');
      await fresh.redis.set(broken, 'not JSON, not packed');

      const first = await packLegacyState(fresh.redis, fresh.keys);
      expect(first).toEqual({ packed: 3, unreadable: [broken], ran: true });
      expect(await fresh.redis.get(broken)).toBe('not JSON, not packed');
      expect(await fresh.redis.exists(fresh.keys.statePacked)).toBe(0);
      // The next start looks again (and finds only the broken value left).
      expect(await packLegacyState(fresh.redis, fresh.keys)).toEqual({ packed: 0, unreadable: [broken], ran: true });
    } finally {
      await closeFresh();
    }
  });

  it('returns at once while another process holds the packing, rewriting nothing', async () => {
    const { context: fresh, close: closeFresh } = await testContext();
    try {
      await storeAsBefore(fresh, 'group:41', [change(1, 1)]);
      await fresh.redis.set(fresh.keys.lock('state-packing'), 'another process', 'PX', 60_000);
      expect(await packLegacyState(fresh.redis, fresh.keys)).toEqual({ packed: 0, unreadable: [], ran: false });
      expect(isPacked((await fresh.redis.getBuffer(fresh.keys.snapshot('group:41'))) ?? Buffer.from('{}'))).toBe(false);
    } finally {
      await closeFresh();
    }
  });
});
