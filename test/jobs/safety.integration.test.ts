import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { STALE_PROPERTY } from '../../src/feeds/build-feed.ts';
import type { RefreshJobResult } from '../../src/jobs/contract.ts';
import { enqueueRefresh } from '../../src/jobs/queues.ts';
import { until } from '../../testkit/poll.ts';
import { icsOf } from '../support/stored-feed.ts';
import type { FaultSpec } from '../upstream/sim-control.ts';
import { type Pipeline, readEvents, startPipeline, waitForJob } from './helpers.ts';

let pipeline: Pipeline;
let groupIds: number[];

beforeAll(async () => {
  // The confirming re-fetch 3 s after a refresh that would drop most classes, not the tests' 200 ms: long enough
  // that a busy machine still checks the refresh's own outcome first, and restores a glitch's classes in time.
  pipeline = await startPipeline({ UPSTREAM_TIMEOUT: '1s', CONFIRM_DELAY: '3s' });
  groupIds = (await pipeline.sim.groups()).filter((group) => group.entryCount >= 8).map((group) => group.id);
});
afterEach(async () => {
  await pipeline.sim.clearFaults();
});
afterAll(async () => {
  await pipeline?.close();
});

const FAULTS: [string, FaultSpec][] = [
  ['HTTP 500', { kind: 'status', status: 500 }],
  ['HTTP 503', { kind: 'status', status: 503 }],
  ['a timeout', { kind: 'timeout' }],
  ['malformed JSON', { kind: 'malformed-json' }],
  ['success: false', { kind: 'unsuccessful', error: 'Сервис временно недоступен' }],
  ['a truncated body', { kind: 'truncated' }],
  ['a connection reset', { kind: 'reset' }],
];

describe('a failed fetch never replaces the last good data', () => {
  it.each(FAULTS)('%s leaves the feed intact and marked stale, until the next success', async (_name, fault) => {
    const source = `group:${groupIds[0]}`;
    const good = await pipeline.refresh(source);
    expect(good.state).toBe('completed');
    const before = await pipeline.ctx.feeds.get(source);
    await pipeline.sim.fault({ endpoint: 'groupSchedule', ...fault });

    const failed = await pipeline.refresh(source);
    expect(failed.state).toBe('failed');
    const stale = await pipeline.ctx.feeds.get(source);
    const state = await pipeline.ctx.registry.get(source);
    expect(state).toMatchObject({ status: 'stale', consecutiveFailures: 2 });
    expect(stale?.staleSince).toBe(state?.staleSince);
    expect(icsOf(stale)).toContain(`${STALE_PROPERTY}:${new Date(state?.staleSince ?? 0).toISOString()}`);
    // Same events, byte for byte apart from the marker.
    expect(readEvents(icsOf(stale))).toEqual(readEvents(icsOf(before)));
    expect(icsOf(stale).replace(/X-TIMETABLE-STALE:[^\r]*\r\n/, '')).toBe(icsOf(before));
    expect((await pipeline.ctx.snapshots.load(source)).snapshot?.entries.length).toBeGreaterThan(0);

    await pipeline.sim.clearFaults();
    const recovered = await pipeline.refresh(source);
    expect(recovered.state).toBe('completed');
    const fresh = await pipeline.ctx.feeds.get(source);
    expect(fresh?.staleSince).toBeUndefined();
    expect(icsOf(fresh)).not.toContain(STALE_PROPERTY);
    expect(await pipeline.ctx.registry.get(source)).toMatchObject({ status: 'ok', consecutiveFailures: 0 });
  });

  it('a 429 pauses the queue instead of failing the job, and the refresh then succeeds', async () => {
    const source = `group:${groupIds[1]}`;
    await pipeline.sim.fault({ endpoint: 'groupSchedule', kind: 'rate-limit', retryAfterSeconds: 1, times: 2 });
    const started = Date.now();
    const job = await pipeline.refresh(source);
    expect(job.state).toBe('completed');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    const stored = await pipeline.ctx.queues.refresh.getJob(job.id);
    expect(stored?.attemptsMade).toBeLessThanOrEqual(1);
    expect((await pipeline.sim.stats()).byEndpoint.groupSchedule).toBeGreaterThanOrEqual(3);
  });

  it('an unknown group is remembered as missing and leaves no source behind', async () => {
    const source = 'group:999999';
    const job = await pipeline.refresh(source);
    expect(job.state).toBe('failed');
    const stored = await pipeline.ctx.queues.refresh.getJob(job.id);
    expect(stored?.attemptsMade).toBe(1);
    expect(await pipeline.ctx.registry.missingReason(source)).toContain('не найдена');
    expect(await pipeline.ctx.registry.get(source)).toBeUndefined();
  });

  it('keeps no job behind for a first request of an unknown group, only the remembered answer', async () => {
    const source = 'group:999998';
    const calls = (await pipeline.sim.stats()).byEndpoint.groupSchedule ?? 0;
    const id = await enqueueRefresh(pipeline.ctx.queues, pipeline.ctx.config, source, {
      reason: 'demand',
      now: pipeline.clock.now,
    });
    const gone = await until(
      async () => ({
        missing: await pipeline.ctx.registry.missingReason(source),
        state: await pipeline.ctx.queues.refresh.getJobState(id),
      }),
      (found) => found.missing !== undefined && found.state === 'unknown',
    );
    expect(gone).toEqual({ missing: expect.stringContaining('не найдена'), state: 'unknown' });
    expect((await pipeline.sim.stats()).byEndpoint.groupSchedule).toBe(calls + 1);
    expect(await pipeline.ctx.registry.get(source)).toBeUndefined();
  });
});

describe('mass-deletion guard', () => {
  it('publishes a refresh that drops most future classes only after a re-fetch agrees', async () => {
    const source = `group:${groupIds[2]}`;
    await pipeline.refresh(source);
    const before = await pipeline.ctx.feeds.get(source);
    const { entries } = await pipeline.ctx.upstream.groupSchedule(groupIds[2] as number);
    for (const entry of entries.slice(0, Math.ceil(entries.length * 0.8))) await pipeline.sim.deleteEntry(entry.id);

    const job = await pipeline.refresh(source);
    expect((job.result as RefreshJobResult).outcome).toBe('awaiting-confirmation');
    expect((await pipeline.ctx.feeds.get(source))?.etag).toBe(before?.etag);
    expect((await pipeline.ctx.registry.get(source))?.status).toBe('awaiting-confirmation');

    // The confirming re-fetch was queued by the job itself (CONFIRM_DELAY above).
    // The feed is stored first and the registry just after it: wait for both.
    const after = await until(
      () => pipeline.ctx.feeds.get(source),
      (feed) => feed?.etag !== before?.etag,
      10_000,
    );
    await until(
      () => pipeline.ctx.registry.get(source),
      (state) => state?.status === 'ok',
      10_000,
    );
    expect(after?.etag).not.toBe(before?.etag);
    const events = readEvents(icsOf(after));
    expect(events.some((event) => event.status === 'CANCELLED')).toBe(true);
    expect(await pipeline.ctx.registry.get(source)).toMatchObject({ status: 'ok' });
  });

  it('a glitch that empties the timetable once is never published', async () => {
    const source = `group:${groupIds[3]}`;
    await pipeline.refresh(source);
    const before = await pipeline.ctx.feeds.get(source);
    const sim = await fetch(`${pipeline.simUrl}/groups/${groupIds[3]}/schedule`).then((response) => response.json());
    expect(sim).toBeTruthy();
    // One empty answer, then the real timetable again.
    const { entries } = await pipeline.ctx.upstream.groupSchedule(groupIds[3] as number);
    const ids = entries.map((entry) => entry.id);
    const backups = await Promise.all(
      ids.map(async (id) => (await pipeline.sim.raw(`/_sim/entries/${id}`)).body as Record<string, unknown>),
    );
    for (const id of ids) await pipeline.sim.deleteEntry(id);
    const job = await pipeline.refresh(source);
    expect((job.result as RefreshJobResult).outcome).toBe('awaiting-confirmation');
    for (const backup of backups) await pipeline.sim.addEntry(backup);
    // The refresh queued its confirming re-fetch before it completed: it must be there, and is waited for.
    const confirmId = (
      await pipeline.ctx.queues.refresh.getJobs(['delayed', 'waiting', 'prioritized', 'active', 'completed', 'failed'])
    ).find((candidate) => candidate.data.reason === 'confirm' && candidate.data.source === source)?.id;
    expect(confirmId).toBeDefined();
    await waitForJob(pipeline.ctx, confirmId ?? '');
    expect((await pipeline.ctx.feeds.get(source))?.etag).toBe(before?.etag);
    expect(await pipeline.ctx.registry.get(source)).toMatchObject({ status: 'ok' });
  });
});
