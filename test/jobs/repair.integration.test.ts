import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RefreshJobResult } from '../../src/jobs/contract.ts';
import { enqueueRefresh } from '../../src/jobs/queues.ts';
import { encodeFeed } from '../../src/store/feed-store.ts';
import { icsOf, storedIcs } from '../support/stored-feed.ts';
import { type Pipeline, readEvents, startPipeline } from './helpers.ts';

let pipeline: Pipeline;
let groupIds: number[];

beforeAll(async () => {
  pipeline = await startPipeline();
  groupIds = (await pipeline.sim.groups()).filter((group) => group.entryCount >= 8).map((group) => group.id);
});
afterEach(async () => {
  await pipeline.sim.clearFaults();
});
afterAll(async () => {
  await pipeline?.close();
});

const outcome = (job: { result: unknown }) => (job.result as RefreshJobResult).outcome;

describe('the stored feed is repaired when it disagrees with the registry', () => {
  it('a lost feed key is rendered again by the next refresh of an unchanged timetable', async () => {
    const source = `group:${groupIds[0]}`;
    await pipeline.refresh(source);
    const before = await pipeline.ctx.feeds.get(source);
    await pipeline.ctx.redis.del(pipeline.ctx.keys.feed(source));
    expect(outcome(await pipeline.refresh(source))).toBe('published');
    expect(await storedIcs(pipeline.ctx.feeds, source)).toContain('BEGIN:VEVENT');
    expect(readEvents(await storedIcs(pipeline.ctx.feeds, source)).length).toBe(readEvents(icsOf(before)).length);
  });

  it('a feed left stale-marked while the registry says ok is rendered fresh', async () => {
    const source = `group:${groupIds[0]}`;
    await pipeline.refresh(source);
    const feed = await pipeline.ctx.feeds.get(source);
    if (!feed) throw new Error('no feed');
    await pipeline.ctx.feeds
      .write(pipeline.ctx.redis.multi(), source, await encodeFeed(icsOf(feed), pipeline.clock.now, 123_000))
      .exec();
    expect(outcome(await pipeline.refresh(source))).toBe('published');
    expect((await pipeline.ctx.feeds.get(source))?.staleSince).toBeUndefined();
  });

  it('a stale re-render never overwrites a feed published after it was read', async () => {
    const source = `group:${groupIds[0]}`;
    await pipeline.refresh(source);
    const feed = await pipeline.ctx.feeds.get(source);
    if (!feed) throw new Error('no feed');
    const newer = await encodeFeed(`${icsOf(feed)}\r\n`, pipeline.clock.now);
    await pipeline.ctx.feeds.write(pipeline.ctx.redis.multi(), source, newer).exec();
    expect(
      await pipeline.ctx.feeds.replaceIf(source, feed.etag, await encodeFeed('old and stale', pipeline.clock.now, 1)),
    ).toBe(false);
    expect((await pipeline.ctx.feeds.get(source))?.etag).toBe(newer.etag);
    expect(
      await pipeline.ctx.feeds.replaceIf(source, newer.etag, await encodeFeed('replaced', pipeline.clock.now, 1)),
    ).toBe(true);
  });
});

describe('what a refresh owes and keeps', () => {
  it('push jobs owed by a publication whose fan-out was interrupted are queued by the next refresh', async () => {
    const source = `group:${groupIds[1]}`;
    await pipeline.refresh(source);
    await pipeline.ctx.redis.sadd(pipeline.ctx.keys.sourceTargets(source), 'target-a', 'target-b');
    await pipeline.ctx.redis.sadd(pipeline.ctx.keys.pushOwed, source);
    const job = await pipeline.refresh(source);
    expect(job.result).toMatchObject({ outcome: 'unchanged', pushJobs: 2 });
    expect(await pipeline.ctx.redis.sismember(pipeline.ctx.keys.pushOwed, source)).toBe(0);
    await pipeline.ctx.redis.del(pipeline.ctx.keys.sourceTargets(source));
  });

  it('an entry the university still sends but that became invalid keeps its last good version', async () => {
    const source = `group:${groupIds[2]}`;
    await pipeline.refresh(source);
    const { entries } = await pipeline.ctx.upstream.groupSchedule(groupIds[2] as number);
    const entry = entries.find((candidate) => candidate.finishDate > '2025-11-01');
    if (!entry) throw new Error('no entry with future classes');
    const before = readEvents(await storedIcs(pipeline.ctx.feeds, source)).filter((event) =>
      event.uid.startsWith(`${entry.id}-`),
    );
    await pipeline.sim.raw(`/_sim/entries/${entry.id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ day_week_schedule: 9 }),
    });
    const job = await pipeline.refresh(source);
    expect(job.state).toBe('completed');
    const after = readEvents(await storedIcs(pipeline.ctx.feeds, source)).filter((event) =>
      event.uid.startsWith(`${entry.id}-`),
    );
    expect(after).toEqual(before);
    expect(after.every((event) => event.status !== 'CANCELLED')).toBe(true);
    expect((await pipeline.ctx.registry.get(source))?.problems).toBe(1);
  });

  it('a request alone registers nothing: a source is registered on its first successful fetch', async () => {
    const failing = `group:${groupIds[3]}`;
    await pipeline.sim.fault({ endpoint: 'groupSchedule', kind: 'status', status: 500 });
    expect((await pipeline.refresh(failing, { reason: 'demand' })).state).toBe('failed');
    expect(await pipeline.ctx.registry.get(failing)).toBeUndefined();
    expect(await pipeline.ctx.registry.isActive(failing)).toBe(false);
    await pipeline.sim.clearFaults();
    expect((await pipeline.refresh(failing, { reason: 'demand' })).state).toBe('completed');
    expect(await pipeline.ctx.registry.isActive(failing)).toBe(true);
  });

  it('a request never pulls a delayed confirmation forward', async () => {
    const source = `group:${groupIds[4]}`;
    await pipeline.refresh(source);
    const confirm = await enqueueRefresh(pipeline.ctx.queues, pipeline.ctx.config, source, {
      reason: 'confirm',
      now: pipeline.clock.now,
      delayMs: 60_000,
    });
    const tick = await enqueueRefresh(pipeline.ctx.queues, pipeline.ctx.config, source, {
      reason: 'schedule',
      now: pipeline.clock.now,
    });
    expect(tick).toBe(confirm);
    expect(await pipeline.ctx.queues.refresh.getJobState(confirm)).toBe('delayed');
    await (await pipeline.ctx.queues.refresh.getJob(confirm))?.remove();
  });

  it('a request deduplicated into a queued re-render makes it fetch', async () => {
    const source = `group:${groupIds[5]}`;
    await pipeline.refresh(source);
    // Delayed so that it stays queued while the request comes in; a re-render never fetches on its own.
    const rerender = await enqueueRefresh(pipeline.ctx.queues, pipeline.ctx.config, source, {
      reason: 'rerender',
      now: pipeline.clock.now,
      delayMs: 60_000,
      jobId: 'rerender-takeover-test',
    });
    const resync = await enqueueRefresh(pipeline.ctx.queues, pipeline.ctx.config, source, {
      reason: 'resync',
      now: pipeline.clock.now,
      followUp: true,
    });
    expect(resync).toBe(rerender);
    const job = await pipeline.ctx.queues.refresh.getJob(rerender);
    expect(job?.data.reason).toBe('resync');
    await job?.remove();

    // A re-render requested while one is queued leaves it a re-render.
    const again = await enqueueRefresh(pipeline.ctx.queues, pipeline.ctx.config, source, {
      reason: 'rerender',
      now: pipeline.clock.now,
      delayMs: 60_000,
      jobId: 'rerender-takeover-test-2',
    });
    await enqueueRefresh(pipeline.ctx.queues, pipeline.ctx.config, source, {
      reason: 'rerender',
      now: pipeline.clock.now,
    });
    const kept = await pipeline.ctx.queues.refresh.getJob(again);
    expect(kept?.data.reason).toBe('rerender');
    await kept?.remove();
  });
});
