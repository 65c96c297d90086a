/**
 * Abuse: one valid credential signed up over and over must not multiply sources (before, 200 sign-ups made 200
 * sources, each refreshed every 30 minutes). Over loopback HTTP against the real app,
 * workers and the university simulator: 10 sign-ups of one user make one source, the sixth to tenth feed
 * tokens revoke the first to fifth, the newest serves the feed and a revoked one answers 404, a token whose
 * feed a calendar fetches outlives newer unused ones; simultaneous
 * sign-ups of one user end with one subscription.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { MAX_LIVE_TOKENS } from '../../src/store/subscription-store.ts';
import { eventually } from '../../testkit/poll.ts';
import { testContext } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';

type Simulator = Awaited<ReturnType<typeof startSimulator>>;
type SignUpAnswer = { status: number; body: Record<string, string> };

let simulator: Simulator;
let ctx: ServiceContext;
let workers: WorkerSet;
let app: FastifyInstance;
let base: string;
let closeContext: () => Promise<void>;
let credentials: string[];

beforeAll(async () => {
  simulator = await startSimulator({
    port: 0,
    seed: 3,
    referenceDate: new Date('2025-10-01T00:00:00Z'),
    groups: 6,
    employees: 6,
    users: 3,
  });
  credentials = (await simControl(simulator.url).users()).map((user) => user.token);
  // This suite measures sources, not the per-client sign-up rate (limits.integration.test.ts does): 18 sign-ups
  // from one address are more than SIGN_UPS_PER_CLIENT allows. The 8 at once need no other setting.
  const opened = await testContext({ UNIVERSITY_API_URL: simulator.url, SIGN_UPS_PER_CLIENT: '100/10m' });
  ctx = opened.context;
  closeContext = opened.close;
  workers = await startWorkers(ctx, inject('redisUrl'), { lockDurationMs: 5_000, stalledIntervalMs: 1_000 });
  app = await buildApp(ctx, { logger: ctx.logger });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await app.close();
  await workers.close();
  await closeContext();
  await simulator.close();
});

async function signUp(credential: string): Promise<SignUpAnswer> {
  const response = await fetch(`${base}/api/subscriptions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ credential }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, string> };
}

/** The status of a personal feed URL, fetched over loopback (the path of the answered feed URL). */
async function feedStatus(feedUrl: string): Promise<number> {
  const response = await fetch(`${base}${new URL(feedUrl).pathname}`);
  await response.arrayBuffer();
  return response.status;
}

/** Personal sources the registry knows, and subscription records, under this test's prefix. */
async function personalSources(): Promise<string[]> {
  const known = await ctx.redis.zrange(ctx.keys.knownSources, '0', '-1');
  return known.filter((source) => source.startsWith('personal:'));
}

function credential(index: number): string {
  const found = credentials[index];
  if (found === undefined) throw new Error(`the simulator has no user ${index}`);
  return found;
}

describe('sign-ups of one university user', () => {
  it('make one source however many: tokens 6..10 revoke 1..5, the newest serves, a revoked one is 404', async () => {
    const answers: SignUpAnswer[] = [];
    for (let i = 0; i < 10; i++) answers.push(await signUp(credential(0)));
    expect(answers.map((answer) => answer.status)).toEqual([201, 200, 200, 200, 200, 200, 200, 200, 200, 200]);
    const ids = new Set(answers.map((answer) => answer.body.id));
    expect(ids.size).toBe(1);
    // Every answer has the same shape, with its own new feed URL.
    for (const { body } of answers)
      expect(Object.keys(body).sort()).toEqual(Object.keys(answers[0]?.body ?? {}).sort());
    expect(new Set(answers.map((answer) => answer.body.feedUrl)).size).toBe(10);

    const sources = await personalSources();
    const records = await ctx.redis.keys(`${ctx.config.redisPrefix}:subscription:*`);
    console.log(
      JSON.stringify({ figure: 'sources after 10 sign-ups of one user', value: sources.length, unit: 'sources' }),
    );
    expect(sources).toEqual([`personal:${answers[0]?.body.id}`]);
    expect(records).toHaveLength(1);

    const newest = answers[9]?.body.feedUrl ?? '';
    expect(await eventually(async () => ((await feedStatus(newest)) === 200 ? 200 : undefined), 'the feed')).toBe(200);
    const statuses = await Promise.all(answers.map(({ body }) => feedStatus(body.feedUrl ?? '')));
    expect(statuses).toEqual([...Array(10 - MAX_LIVE_TOKENS).fill(404), ...Array(MAX_LIVE_TOKENS).fill(200)]);

    // A revoked token no longer opens the subscription's API either; the newest does.
    const manage = (token: string) =>
      fetch(`${base}/api/subscriptions/${answers[0]?.body.id}`, { headers: { authorization: `Bearer ${token}` } });
    expect((await manage(answers[0]?.body.token ?? '')).status).toBe(401);
    expect((await manage(answers[9]?.body.token ?? '')).status).toBe(200);
  });

  it('end with one subscription when they arrive at once', async () => {
    const answers = await Promise.all(Array.from({ length: 8 }, () => signUp(credential(1))));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    const ids = new Set(answers.map((answer) => answer.body.id));
    expect(ids.size).toBe(1);
    const [id = ''] = ids;
    expect(await ctx.subscriptions.liveTokenCount(id)).toBe(MAX_LIVE_TOKENS);
    expect(await personalSources()).toContain(`personal:${id}`);
    expect(await personalSources()).toHaveLength(2);
  });

  it('revoke the least recently used token: a feed URL in use keeps working', async () => {
    const answers: SignUpAnswer[] = [];
    for (let i = 0; i < MAX_LIVE_TOKENS; i++) answers.push(await signUp(credential(2)));
    const first = answers[0]?.body.feedUrl ?? '';
    expect(await eventually(async () => ((await feedStatus(first)) === 200 ? 200 : undefined), 'the feed')).toBe(200);
    answers.push(await signUp(credential(2)));
    const statuses = await Promise.all(answers.map(({ body }) => feedStatus(body.feedUrl ?? '')));
    expect(statuses).toEqual([200, 404, ...Array(MAX_LIVE_TOKENS - 1).fill(200)]);
  });
});
