import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { enqueueRefresh } from '../../src/jobs/queues.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import type { ChangeRecord, OccurrenceBrief } from '../../src/timetable/publication.ts';
import { testContext } from '../support/service.ts';
import { adminApp, BEARER } from './admin-app.ts';

describe('admin source table and change log', () => {
  let ctx: ServiceContext;
  let app: FastifyInstance;
  let close: () => Promise<void>;

  beforeEach(async () => {
    const opened = await testContext();
    ctx = opened.context;
    close = opened.close;
    app = await adminApp(ctx);
  });

  afterEach(async () => {
    await app.close();
    await close();
  });

  const get = (url: string) => app.inject({ method: 'GET', url, headers: BEARER });

  it('pages the known sources in order of first activation, with their state', async () => {
    const sources = ['group:10', 'group:11', 'employee:12', 'group:13', 'group:14'];
    for (const [index, source] of sources.entries()) await ctx.registry.activate(source, 1_000 + index);
    await ctx.registry.recordFailure('employee:12', { now: 2_000, kind: 'timeout', message: 'upstream timed out' });

    const first = (await get('/admin/sources')).json();
    expect(first).toMatchObject({ total: 5, offset: 0, limit: 100 });
    expect(first.sources.map((row: { source: string }) => row.source)).toEqual(sources);

    const page = await get('/admin/sources?offset=2&limit=2');
    expect(page.statusCode).toBe(200);
    expect(page.json()).toEqual({
      total: 5,
      offset: 2,
      limit: 2,
      sources: [
        {
          source: 'employee:12',
          status: 'pending',
          active: true,
          activeSince: '1970-01-01T00:00:01.002Z',
          lastRequested: '1970-01-01T00:00:01.002Z',
          lastAttempt: '1970-01-01T00:00:02.000Z',
          lastSuccess: null,
          lastChange: null,
          lastError: 'upstream timed out',
          lastErrorKind: 'timeout',
          lastErrorAt: '1970-01-01T00:00:02.000Z',
          consecutiveFailures: 1,
          staleSince: null,
          occurrences: null,
          problems: null,
          pendingHash: null,
          pendingSince: null,
          nextRefresh: null,
          parkedBy: null,
        },
        {
          source: 'group:13',
          status: 'pending',
          active: true,
          activeSince: '1970-01-01T00:00:01.003Z',
          lastRequested: '1970-01-01T00:00:01.003Z',
          lastAttempt: null,
          lastSuccess: null,
          lastChange: null,
          lastError: null,
          lastErrorKind: null,
          lastErrorAt: null,
          consecutiveFailures: 0,
          staleSince: null,
          occurrences: null,
          problems: null,
          pendingHash: null,
          pendingSince: null,
          nextRefresh: null,
          parkedBy: null,
        },
      ],
    });
    expect((await get('/admin/sources?offset=5&limit=500')).json()).toEqual({
      total: 5,
      offset: 5,
      limit: 500,
      sources: [],
    });
  });

  it("shows each source's next background refresh and why, and what parks it", async () => {
    const now = ctx.now();
    const sources = ['group:1', 'personal:AAAAAAAAAAAAAAAAAAAAAA', 'employee:3', 'group:4', 'group:5'];
    for (const source of sources) await ctx.registry.activate(source, now);
    const state = { lastRefresh: now, changes: 0, observedMs: 0, weight: 1 };
    await ctx.freshness.plan('group:1', { next: now + 60_000, deadline: now + 1_800_000, state });
    await ctx.freshness.plan('personal:AAAAAAAAAAAAAAAAAAAAAA', {
      next: now + 3_600_000,
      deadline: now + 3_600_000,
      state: { ...state, parkedBy: 'group:1' },
    });
    await ctx.freshness.plan('employee:3', { next: now - 120_000, deadline: now - 60_000, state });
    await ctx.freshness.plan('group:4', { next: now + 60_000, deadline: now + 1_800_000, state });
    // A change of group:1 queued a related refresh of group:4.
    await enqueueRefresh(ctx.queues, ctx.config, 'group:4', { reason: 'related', now, cause: 'group:1' });
    const rows = (await get('/admin/sources')).json().sources as Record<string, unknown>[];
    const byId = new Map(rows.map((row) => [row.source, { nextRefresh: row.nextRefresh, parkedBy: row.parkedBy }]));
    const at = (ms: number) => new Date(ms).toISOString();
    expect(byId.get('group:1')).toEqual({ nextRefresh: { at: at(now + 60_000), why: 'rotation' }, parkedBy: null });
    expect(byId.get('personal:AAAAAAAAAAAAAAAAAAAAAA')).toEqual({
      nextRefresh: { at: at(now + 3_600_000), why: 'parked' },
      parkedBy: 'group:1',
    });
    expect(byId.get('employee:3')).toEqual({ nextRefresh: { at: at(now - 60_000), why: 'overdue' }, parkedBy: null });
    expect(byId.get('group:4')?.nextRefresh).toMatchObject({ why: 'related' });
    // Not planned (the fixed policy, or not synced yet).
    expect(byId.get('group:5')).toEqual({ nextRefresh: null, parkedBy: null });
  });

  it('shows a source the pacer took and queued as queued, from when its refresh was queued', async () => {
    const now = ctx.now();
    const sources = ['group:6', 'personal:BBBBBBBBBBBBBBBBBBBBBB', 'group:7'];
    for (const source of sources) await ctx.registry.activate(source, now);
    const state = { lastRefresh: now, changes: 0, observedMs: 0, weight: 1 };
    const far = now + 1_800_000;
    await ctx.freshness.plan('group:6', { next: now - 2_000, deadline: far, state });
    await ctx.freshness.plan('personal:BBBBBBBBBBBBBBBBBBBBBB', {
      next: now - 1_000,
      deadline: far,
      state: { ...state, parkedBy: 'group:6' },
    });
    await ctx.freshness.plan('group:7', { next: now + 60_000, deadline: far, state });
    // What a pacer step does: take the two due, queue their refreshes, settle them an interval on.
    const timing = { leadMs: 90_000, retakeMs: 30_000 };
    const taken = await ctx.freshness.take(now, 2, 0, timing);
    expect(taken.map((source) => source.source)).toEqual(sources.slice(0, 2));
    const queuedAt = new Map<string, number>();
    for (const { source } of taken) {
      const id = await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'schedule', now });
      queuedAt.set(source, (await ctx.queues.refresh.getJob(id))?.timestamp ?? Number.NaN);
    }
    await ctx.freshness.settle(sources.slice(0, 2), now, timing, now + ctx.config.refreshIntervalMs);

    const rows = (await get('/admin/sources')).json().sources as Record<string, unknown>[];
    const byId = new Map(rows.map((row) => [row.source, { nextRefresh: row.nextRefresh, parkedBy: row.parkedBy }]));
    const at = (ms: number | undefined) => new Date(ms ?? Number.NaN).toISOString();
    expect(byId.get('group:6')).toEqual({
      nextRefresh: { at: at(queuedAt.get('group:6')), why: 'queued' },
      parkedBy: null,
    });
    expect(byId.get('personal:BBBBBBBBBBBBBBBBBBBBBB')).toEqual({
      nextRefresh: { at: at(queuedAt.get('personal:BBBBBBBBBBBBBBBBBBBBBB')), why: 'queued' },
      parkedBy: 'group:6',
    });
    // Not taken: its own turn.
    expect(byId.get('group:7')).toEqual({ nextRefresh: { at: at(now + 60_000), why: 'rotation' }, parkedBy: null });
  });

  it('answers 400 for a bad page', async () => {
    for (const query of ['limit=501', 'limit=0', 'limit=abc', 'offset=-1', 'offset=1.5']) {
      const response = await get(`/admin/sources?${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(response.json().error, query).toMatch(/^(limit|offset): /);
    }
  });

  it("shows a source's change log, newest first", async () => {
    const brief: OccurrenceBrief = {
      uid: 'u1',
      date: '2025-09-01',
      begin: '09:00',
      end: '10:30',
      summary: 'Physics',
      location: '101',
    };
    const older: ChangeRecord = {
      at: 1_000,
      counts: { added: 1, removed: 0, moved: 0, changed: 0 },
      added: [brief],
      removed: [],
      moved: [],
      changed: [],
    };
    const newer: ChangeRecord = {
      at: 2_000,
      counts: { added: 0, removed: 1, moved: 0, changed: 0 },
      added: [],
      removed: [brief],
      moved: [],
      changed: [],
    };
    await ctx.snapshots.appendChange(ctx.redis.multi(), 'group:4242', older).exec();
    await ctx.snapshots.appendChange(ctx.redis.multi(), 'group:4242', newer).exec();

    const none = { added: 0, removed: 0, moved: 0, changed: 0 };
    for (const path of ['group%3A4242', 'group:4242']) {
      const response = await get(`/admin/sources/${path}/changes`);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({
        source: 'group:4242',
        changes: [
          { ...newer, at: '1970-01-01T00:00:02.000Z', unlisted: none },
          { ...older, at: '1970-01-01T00:00:01.000Z', unlisted: none },
        ],
      });
    }
  });

  it('answers 400 for a malformed source and 404 for one never seen', async () => {
    for (const path of ['group%3Aabc', 'room%3A1', 'group', 'personal%3Ashort']) {
      const response = await get(`/admin/sources/${path}/changes`);
      expect(response.statusCode, path).toBe(400);
      expect(response.json().error).toContain('not a source');
    }
    expect((await get('/admin/sources/group%3A777/changes')).statusCode).toBe(404);
    await ctx.registry.activate('group:777', 1);
    expect((await get('/admin/sources/group%3A777/changes')).json()).toEqual({ source: 'group:777', changes: [] });
  });
});
