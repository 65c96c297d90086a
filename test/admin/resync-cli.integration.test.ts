import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startEmbeddedRedis } from '../../src/runtime/embedded-redis.ts';
import { until } from '../../testkit/poll.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';
import { runCli, startCli } from '../support/cli.ts';
import { testContext } from '../support/service.ts';

describe('timetable-sync resync', () => {
  let ctx: ServiceContext;
  let close: () => Promise<void>;
  let env: Record<string, string>;

  beforeEach(async () => {
    const opened = await testContext();
    ctx = opened.context;
    close = opened.close;
    env = { REDIS_URL: inject('redisUrl'), REDIS_PREFIX: ctx.config.redisPrefix };
  });

  afterEach(async () => close());

  it('queues a refresh of a group and prints its job id', async () => {
    const result = await runCli(['resync', '--group', '042'], { env });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const ids = result.stdout.trim().split('\n');
    expect(ids).toHaveLength(1);
    const job = await ctx.queues.refresh.getJob(ids[0] as string);
    expect(job?.data).toMatchObject({ source: 'group:42', reason: 'resync' });
    expect(await ctx.registry.isActive('group:42')).toBe(true);
    // A second resync while it waits answers the same job.
    expect((await runCli(['resync', '--group', '42'], { env })).stdout).toBe(result.stdout);
  });

  it('prints one id per active source for --all', async () => {
    await ctx.registry.activate('group:1', 1);
    await ctx.registry.activate('employee:2', 2);
    const result = await runCli(['resync', '--all'], { env });
    expect(result.code).toBe(0);
    const ids = result.stdout.trim().split('\n');
    expect(ids).toHaveLength(2);
    expect(await Promise.all(ids.map(async (id) => (await ctx.queues.refresh.getJob(id))?.data.source))).toEqual([
      'group:1',
      'employee:2',
    ]);
  });

  it('resyncs a subscription, and exits 1 naming an unknown one', async () => {
    const { subscription } = await ctx.subscriptions.create({
      credential: 'secret-credential',
      name: 'Petrova',
      upstreamUserId: 9,
      now: 1,
    });
    const ok = await runCli(['resync', '--subscription', subscription.id], { env });
    expect(ok.code).toBe(0);
    expect((await ctx.queues.refresh.getJob(ok.stdout.trim()))?.data.source).toBe(`personal:${subscription.id}`);

    const unknown = await runCli(['resync', '--subscription', 'B'.repeat(22)], { env });
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toContain(`no subscription with id "${'B'.repeat(22)}"`);

    // One id in 64 starts with "-"; it is an id, not an option (this once failed CI with exit 64).
    const dashed = `-${'B'.repeat(21)}`;
    const dash = await runCli(['resync', '--subscription', dashed], { env });
    expect(dash.stderr).toContain(`no subscription with id "${dashed}"`);
    expect(dash.code).toBe(1);
  });

  it('keeps usage errors at exit 64', async () => {
    for (const args of [['resync'], ['resync', '--all', '--group', '1'], ['resync', '--employee', 'x']]) {
      expect((await runCli(args, { env })).code, args.join(' ')).toBe(64);
    }
  });

  it('exits 1 with a clear message when there is no Redis to talk to, and never starts one', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'tts-resync-'));
    try {
      const result = await runCli(['resync', '--all'], { cwd: folder });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        'no Redis: set REDIS_URL (or REDIS_SENTINELS, REDIS_CLUSTER_NODES) or run `timetable-sync start`/`demo` in this folder',
      );
      expect(existsSync(join(folder, '.data'))).toBe(false);
      const down = await runCli(['resync', '--all'], { env: { REDIS_URL: 'redis://127.0.0.1:1' }, timeoutMs: 20_000 });
      expect(down.code).toBe(1);
      expect(down.stderr).toContain('cannot reach Redis at redis://127.0.0.1:1');
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('finds the embedded Redis that a running start or demo recorded under DATA_DIR', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'tts-resync-'));
    const redis = await startEmbeddedRedis({
      dataDir: join(folder, '.data'),
      logger: silentLogger(),
      persistence: false,
    });
    try {
      const result = await runCli(['resync', '--employee', '5'], {
        cwd: folder,
        env: { REDIS_PREFIX: 'embedded-test' },
      });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^employee-5-\S+\n$/);
    } finally {
      await redis.stop();
      await rm(folder, { recursive: true, force: true });
    }
  });
});

describe('timetable-sync resync --wait', () => {
  let pipeline: Pipeline;
  let env: Record<string, string>;

  beforeEach(async () => {
    pipeline = await startPipeline();
    env = { REDIS_URL: inject('redisUrl'), REDIS_PREFIX: pipeline.ctx.config.redisPrefix };
  });

  afterEach(async () => pipeline.close());

  it('waits for every job, shows progress, and sums up with failures by reason (exit 1)', async () => {
    const groups = (await pipeline.sim.groups()).slice(0, 4);
    for (const group of groups) await pipeline.ctx.registry.activate(`group:${group.id}`, pipeline.clock.now);
    await pipeline.ctx.registry.activate('group:999999', pipeline.clock.now);
    const result = await runCli(['resync', '--all', '--wait'], { env, timeoutMs: 60_000 });
    expect(result.stderr).toContain('waiting for 5 refresh jobs (Ctrl-C stops waiting; the jobs go on)');
    // Not a terminal: plain lines, the last one complete, no carriage return or escape sequence.
    expect(result.stderr).toMatch(/^5\/5 100% · done 4 · failed 1 · \S+ · 0s left$/m);
    expect(result.stderr).not.toMatch(/\r|\[K/);
    expect(result.stdout).toMatch(
      /^Finished in \d+s: 4 done, 1 failed, of 5 \(.+\)\.\nFailed:\n {2}1 × .+: group-999999-\S+\n$/,
    );
    expect(result.code).toBe(1);
  }, 90_000);

  it('exits 0 when the job completed', async () => {
    const [group] = await pipeline.sim.groups();
    const result = await runCli(['resync', '--group', String(group?.id), '--wait'], { env, timeoutMs: 60_000 });
    expect(result.stdout).toMatch(/^Finished in \d+s: 1 done, 0 failed, of 1 \(.+\)\.\n$/);
    expect(result.code).toBe(0);
    expect(await pipeline.ctx.feeds.get(`group:${group?.id}`)).toBeDefined();
  }, 90_000);

  it('stops waiting on Ctrl-C without cancelling the job (exit 130)', async () => {
    await pipeline.ctx.queues.refresh.pause();
    const [group] = await pipeline.sim.groups();
    const child = startCli(['resync', '--group', String(group?.id), '--wait'], { env });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = new Promise<number | null>((resolve) => child.once('close', resolve));
    await until(
      async () => stderr,
      (text) => text.includes('waiting for 1 refresh job'),
      30_000,
    );
    child.kill('SIGINT');
    expect(await code).toBe(130);
    expect(stdout).toMatch(/^Stopped waiting after \d+s: 0 done, 0 failed, 1 still queued or running/);
    const [id] = await pipeline.ctx.queues.refresh.getJobs(['prioritized', 'waiting']);
    expect(id?.data).toMatchObject({ source: `group:${group?.id}`, reason: 'resync' });
  }, 90_000);
});
