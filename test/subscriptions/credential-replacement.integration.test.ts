/**
 * Replacing a credential while a refresh is running: the running refresh still uses the old credential, so a
 * follow-up refresh must be queued behind it, and the old refresh must not be able to reject the new credential.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { followUpJobId } from '../../src/jobs/queues.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { sourceToken } from '../../src/timetable/source.ts';
import { eventually, waitUntil } from '../../testkit/poll.ts';
import { type HeldWorker, holdingWorker } from '../admin/admin-app.ts';
import { testContext } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';

type Simulator = Awaited<ReturnType<typeof startSimulator>>;

let simulator: Simulator;
let ctx: ServiceContext;
let app: FastifyInstance;
let closeContext: () => Promise<void>;
let worker: HeldWorker | undefined;

beforeAll(async () => {
  simulator = await startSimulator({
    port: 0,
    seed: 1,
    referenceDate: new Date('2025-10-01T00:00:00Z'),
    groups: 4,
    employees: 4,
    users: 2,
  });
  const opened = await testContext({ UNIVERSITY_API_URL: simulator.url });
  ctx = opened.context;
  closeContext = opened.close;
  app = await buildApp(ctx, { logger: ctx.logger });
});
afterAll(async () => {
  await worker?.close();
  await app.close();
  await closeContext();
  await simulator.close();
});

it('queues a follow-up refresh behind one running with the old credential, which cannot reject the new one', async () => {
  const [user] = await simControl(simulator.url).users();
  if (!user) throw new Error('the simulator has no users');
  const created = await app.inject({ method: 'POST', url: '/api/subscriptions', payload: { credential: user.token } });
  expect(created.statusCode).toBe(201);
  const { id = '', source = '', token = '' } = created.json<Record<string, string>>();

  // A refresh starts with the current credential and is held while the user replaces it.
  worker = holdingWorker(ctx);
  const running = await eventually(
    async () => (await ctx.queues.refresh.getJobs(['active'])).find((job) => job.data.source === source),
    'the refresh to start',
  );
  const used = await ctx.subscriptions.credentialFor(id);
  const patched = await app.inject({
    method: 'PATCH',
    url: `/api/subscriptions/${id}`,
    headers: { authorization: `Bearer ${token}` },
    payload: { credential: user.token },
  });
  expect(patched.statusCode).toBe(200);

  // The held refresh now finds its (old) credential rejected: too late, a new one is stored.
  expect(await ctx.subscriptions.markNeedsCredential(id, 'rejected', ctx.now(), used?.version)).toBe(false);
  expect((await ctx.subscriptions.get(id))?.status).toBe('active');

  // BullMQ keeps the follow-up aside while the running job is active and queues it when that job ends.
  const followUp = followUpJobId(sourceToken(source), running.id ?? '');
  worker.release();
  await waitUntil(() => worker?.started.includes(followUp) === true, 'the follow-up to start', 3_000);
  expect(worker.started).toEqual([running.id, followUp]);
  expect((await ctx.queues.refresh.getJob(followUp))?.data).toMatchObject({ source, reason: 'subscription' });
});
