import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { followUpJobId } from '../jobs/queues.ts';
import { type ResyncTarget, requestResync, UnknownSubscriptionError } from '../jobs/resync.ts';
import type { ServiceContext } from '../runtime/context.ts';
import { InvalidSourceError, parseSource, type SourceKey, SUBSCRIPTION_ID, sourceKey } from '../sources/source.ts';
import { adminAuthHook, BOARD_PATH } from './admin-auth.ts';
import { HttpError } from './errors.ts';
import { registerGoogleTargetRoutes } from './google-target-routes.ts';

const resyncBody = z.strictObject({
  source: z.string().optional(),
  subscription: z
    .string()
    .regex(SUBSCRIPTION_ID, 'must be a subscription id (22 characters: letters, digits, _ and -)')
    .optional(),
  all: z.literal(true, { error: 'must be true' }).optional(),
});

const pageQuery = z.object({
  offset: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .default(0),
  limit: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(500, 'must be at most 500')
    .default(100),
});

/** Job ids we and BullMQ make never contain `:`; this also keeps lookups off BullMQ's own keys (`de:…`). */
const JOB_ID = /^[\w.=-]{1,200}$/;
/** A follow-up queued behind a running refresh: `<source token>-after-<12 hex of sha1(running job id)>`. */
const FOLLOW_UP_ID = /^(group|employee|personal)-(.+)-after-([0-9a-f]{12})$/;

/**
 * The admin API under `/admin`, all behind the admin token: resync, job state, the source table, a source's
 * change log, and Bull Board at `/admin/queues`.
 */
export async function registerAdminRoutes(app: FastifyInstance, ctx: ServiceContext): Promise<void> {
  await app.register(
    async (admin) => {
      admin.addHook('onRequest', adminAuthHook(ctx.config));
      // Unknown /admin paths pass the token check first, so that nothing under /admin answers without it.
      admin.setNotFoundHandler(async (request) => {
        throw new HttpError(404, `no admin route ${request.method} ${request.url.split('?', 1)[0]}`);
      });
      registerResync(admin, ctx);
      registerJobs(admin, ctx);
      registerSources(admin, ctx);
      registerGoogleTargetRoutes(admin, ctx);
      await registerBoard(admin, ctx);
    },
    { prefix: '/admin' },
  );
}

function registerResync(admin: FastifyInstance, ctx: ServiceContext): void {
  admin.post('/resync', async (request, reply) => {
    const target = resyncTarget(request.body ?? {});
    try {
      const jobs = await requestResync(ctx, target);
      ctx.logger.info({ target, jobs: jobs.length }, 'admin resync queued');
      return await reply.code(202).send({ jobs });
    } catch (error) {
      if (error instanceof InvalidSourceError) throw new HttpError(400, `source: ${error.message}`);
      if (error instanceof UnknownSubscriptionError) throw new HttpError(404, error.message);
      throw error;
    }
  });
}

/** The one target of a resync body; a 400 naming what is wrong otherwise. */
function resyncTarget(body: unknown): ResyncTarget {
  const parsed = resyncBody.safeParse(body);
  if (!parsed.success)
    throw new HttpError(
      400,
      parsed.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`).join('; '),
    );
  const { source, subscription, all } = parsed.data;
  const given = [source, subscription, all].filter((value) => value !== undefined).length;
  if (given !== 1)
    throw new HttpError(400, 'give exactly one of "source" (e.g. "group:4242"), "subscription" (an id) or "all": true');
  if (source !== undefined) return { source };
  if (subscription !== undefined) return { subscription };
  return { all: true };
}

function registerJobs(admin: FastifyInstance, ctx: ServiceContext): void {
  admin.get<{ Params: { id: string } }>('/jobs/:id', async (request) => {
    const { id } = request.params;
    if (!JOB_ID.test(id)) throw new HttpError(400, 'not a job id: use the id that POST /admin/resync answered');
    const view =
      (await jobView(ctx.queues.refresh, id)) ??
      (await jobView(ctx.queues.push, id)) ??
      (await pendingFollowUp(ctx, id));
    if (view === undefined) throw new HttpError(404, `no job "${id}" (finished jobs are kept for a day)`);
    return view;
  });
}

/** A job as the admin API shows it. Times are epoch milliseconds, like the source table's. */
async function jobView(
  queue: Queue<{ source: SourceKey }, unknown, string>,
  id: string,
): Promise<Record<string, unknown> | undefined> {
  // The state first: it answers `unknown` for anything that is not a job, without reading the key as a hash.
  const state = await queue.getJobState(id);
  if (state === 'unknown') return undefined;
  const job = await queue.getJob(id);
  if (!job) return undefined;
  return {
    id,
    queue: queue.name,
    name: job.name,
    source: job.data.source ?? null,
    state,
    attempts: job.attemptsMade,
    maxAttempts: job.opts.attempts ?? 1,
    lastError: job.failedReason || null,
    result: job.returnvalue ?? null,
    createdAt: job.timestamp,
    processedAt: job.processedOn ?? null,
    finishedAt: job.finishedOn ?? null,
  };
}

/**
 * A follow-up resync asked for while the source's refresh runs exists as a job only once that refresh ends;
 * until then its id is answered as queued. The running job is checked against the id's digest (see
 * `enqueueRefresh`), so that a made-up id is still unknown.
 */
async function pendingFollowUp(ctx: ServiceContext, id: string): Promise<Record<string, unknown> | undefined> {
  const match = FOLLOW_UP_ID.exec(id);
  if (!match) return undefined;
  const [, kind = '', sourceId = ''] = match;
  const token = `${kind}-${sourceId}`;
  const running = await ctx.queues.refresh.getDeduplicationJobId(token);
  if (running === null || followUpJobId(token, running) !== id) return undefined;
  const state = await ctx.queues.refresh.getJobState(running);
  // Active, or waiting for a retry of that same refresh: the follow-up stays stored until it ends.
  if (state === 'completed' || state === 'failed' || state === 'unknown') return undefined;
  const source = `${kind}:${sourceId}`;
  return {
    id,
    queue: ctx.queues.refresh.name,
    source,
    state: 'queued',
    note: `starts when the running refresh of ${source} ends`,
  };
}

function registerSources(admin: FastifyInstance, ctx: ServiceContext): void {
  admin.get('/sources', async (request) => {
    const parsed = pageQuery.safeParse(request.query ?? {});
    if (!parsed.success)
      throw new HttpError(
        400,
        parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '),
      );
    const { offset, limit } = parsed.data;
    const page = await ctx.registry.page(offset, limit);
    return { total: page.total, offset, limit, sources: page.sources };
  });

  admin.get<{ Params: { source: string } }>('/sources/:source/changes', async (request) => {
    let source: SourceKey;
    try {
      source = sourceKey(parseSource(request.params.source));
    } catch (error) {
      if (error instanceof InvalidSourceError) throw new HttpError(400, error.message);
      throw error;
    }
    const changes = await ctx.snapshots.changes(source);
    if (changes.length === 0 && (await ctx.registry.get(source)) === undefined)
      throw new HttpError(404, `unknown source ${source}`);
    return { source, changes };
  });
}

/** Bull Board for the three queues (its retry, clean and promote buttons included: admins only). */
async function registerBoard(admin: FastifyInstance, ctx: ServiceContext): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  createBullBoard({
    queues: [
      new BullMQAdapter(ctx.queues.refresh),
      new BullMQAdapter(ctx.queues.push),
      new BullMQAdapter(ctx.queues.schedule),
    ],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'timetable-sync' } },
  });
  await admin.register(serverAdapter.registerPlugin(), { prefix: BOARD_PATH.slice('/admin'.length) });
}
