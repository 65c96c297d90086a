import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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
