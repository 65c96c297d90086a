/**
 * The admin API under `/admin`, all behind the admin token: resync, job state, the source table, a source's
 * change log, the term starts in force, Google and CalDAV push targets, the group directory import, webhooks,
 * the notification channels' state, and Bull Board at `/admin/queues`.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { type FreshnessViewDeps, freshnessViews } from '../jobs/freshness-view.ts';
import { findJob, JOB_ID } from '../jobs/job-status.ts';
import { KEEP_COMPLETED, KEEP_FAILED, type Queues } from '../jobs/queues.ts';
import { type ResyncTarget, requestResync } from '../jobs/resync.ts';
import type { Logger } from '../logger.ts';
import type { SourceRegistry } from '../store/registry.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import type { TermCountStore } from '../store/term-counts.ts';
import { parseSource, SUBSCRIPTION_ID, sourceKey } from '../timetable/source.ts';
import { resolveTermStarts } from '../timetable/terms.ts';
import { adminAuthHook, BOARD_PATH } from './admin-auth.ts';
import { type CalDavTargetRouteDeps, registerCaldavTargetRoutes } from './caldav-target-routes.ts';
import { type ChannelRouteDeps, registerChannelRoutes } from './channel-routes.ts';
import { type DirectoryRouteDeps, registerDirectoryRoutes } from './directory-routes.ts';
import { HttpError, routeNotFound } from './errors.ts';
import { type GoogleTargetRouteDeps, registerGoogleTargetRoutes } from './google-target-routes.ts';
import { parityView } from './parity-view.ts';
import { parseOr400, parsePage } from './parse.ts';
import { changeView, iso, sourceView } from './views.ts';
import { registerWebhookRoutes, type WebhookRouteDeps } from './webhook-routes.ts';

const resyncBody = z.strictObject(
  {
    source: z.string({ error: 'must be a string such as "group:4242"' }).optional(),
    subscription: z
      .string({ error: 'must be a string' })
      .regex(SUBSCRIPTION_ID, 'must be a subscription id (22 characters: letters, digits, _ and -)')
      .optional(),
    all: z.literal(true, { error: 'must be true' }).optional(),
  },
  { error: (issue) => (issue.code === 'invalid_type' ? 'body must be a JSON object' : undefined) },
);

/** What the admin routes read and queue with, beyond what their Google target and directory routes need. */
export type AdminRouteDeps = GoogleTargetRouteDeps &
  CalDavTargetRouteDeps &
  DirectoryRouteDeps &
  WebhookRouteDeps &
  ChannelRouteDeps &
  FreshnessViewDeps &
  Parameters<typeof requestResync>[0] &
  Parameters<typeof findJob>[0] & {
    readonly config: Pick<Config, 'adminToken' | 'weekParityAnchors' | 'webhookAllowPrivate'>;
    readonly logger: Pick<Logger, 'info'>;
    readonly registry: Pick<SourceRegistry, 'page' | 'get'>;
    readonly snapshots: Pick<SnapshotStore, 'changes'>;
    readonly termCounts: Pick<TermCountStore, 'stored' | 'totals'>;
    readonly queues: Queues;
    readonly now: () => number;
  };

/** Registers the admin routes in their own scope, behind the admin token. */
export async function registerAdminRoutes(app: FastifyInstance, ctx: AdminRouteDeps): Promise<void> {
  await app.register(
    async (admin) => {
      admin.addHook('onRequest', adminAuthHook(ctx.config));
      // Unknown /admin paths pass the token check first, so that nothing under /admin answers without it.
      admin.setNotFoundHandler(async (request) => {
        throw routeNotFound(request, true);
      });
      registerResync(admin, ctx);
      registerJobs(admin, ctx);
      registerSources(admin, ctx);
      registerParity(admin, ctx);
      registerGoogleTargetRoutes(admin, ctx);
      registerCaldavTargetRoutes(admin, ctx);
      registerDirectoryRoutes(admin, ctx);
      registerWebhookRoutes(admin, ctx);
      registerChannelRoutes(admin, ctx);
      await registerBoard(admin, ctx);
    },
    { prefix: '/admin' },
  );
}

function registerResync(admin: FastifyInstance, ctx: AdminRouteDeps): void {
  admin.post('/resync', async (request, reply) => {
    const target = resyncTarget(request.body ?? {});
    const jobs = await requestResync(ctx, target);
    ctx.logger.info({ target, jobs: jobs.length }, 'admin resync queued');
    return reply.code(202).send({ jobs });
  });
}

/** The one target of a resync body; a 400 naming what is wrong otherwise. */
function resyncTarget(body: unknown): ResyncTarget {
  const { source, subscription, all } = parseOr400(resyncBody, body, 'INVALID_BODY');
  const given = [source, subscription, all].filter((value) => value !== undefined).length;
  if (given !== 1)
    throw new HttpError('INVALID_BODY', {
      en: 'give exactly one of "source" (e.g. "group:4242"), "subscription" (an id) or "all": true',
      ru: 'укажите ровно одно из: "source" (например, "group:4242"), "subscription" (id) или "all": true',
    });
  if (source !== undefined) return { source };
  if (subscription !== undefined) return { subscription };
  return { all: true };
}

function registerJobs(admin: FastifyInstance, ctx: AdminRouteDeps): void {
  admin.get<{ Params: { id: string } }>('/jobs/:id', async (request) => {
    const { id } = request.params;
    if (!JOB_ID.test(id))
      throw new HttpError('INVALID_ID', {
        en: 'not a job id: use the id that POST /admin/resync answered',
        ru: 'это не id задачи: используйте id из ответа POST /admin/resync',
      });
    const job = await findJob(ctx, id);
    if (job === undefined)
      throw new HttpError('JOB_NOT_FOUND', {
        en: `no job "${id}" (completed jobs are kept an hour and only the ${KEEP_COMPLETED.count.toLocaleString('en')} most recent, failed ones a week and only the ${KEEP_FAILED.count.toLocaleString('en')} most recent)`,
        ru: `нет задачи "${id}" (завершённые задачи хранятся час, и только ${KEEP_COMPLETED.count.toLocaleString('en')} последних, неудачные — неделю, и только ${KEEP_FAILED.count.toLocaleString('en')} последних)`,
      });
    if ('note' in job) return job;
    return {
      ...job,
      createdAt: iso(job.createdAt),
      processedAt: iso(job.processedAt),
      finishedAt: iso(job.finishedAt),
    };
  });
}

function registerSources(admin: FastifyInstance, ctx: AdminRouteDeps): void {
  admin.get('/sources', async (request) => {
    const { offset, limit } = parsePage(request.query);
    const page = await ctx.registry.page(offset, limit);
    const plans = await freshnessViews(
      ctx,
      page.sources.map((state) => state.source),
      ctx.now(),
    );
    const sources = page.sources.map((state, index) => sourceView(state, plans[index]));
    return { total: page.total, offset, limit, sources };
  });

  admin.get<{ Params: { source: string } }>('/sources/:source/changes', async (request) => {
    const source = sourceKey(parseSource(request.params.source));
    const changes = await ctx.snapshots.changes(source);
    if (changes.length === 0 && (await ctx.registry.get(source)) === undefined)
      throw new HttpError('SOURCE_NOT_FOUND', { en: `unknown source ${source}`, ru: `неизвестный источник ${source}` });
    return { source, changes: changes.map(changeView) };
  });
}

/** The term starts in force for the whole deployment, where each came from and which dates it governs. */
function registerParity(admin: FastifyInstance, ctx: AdminRouteDeps): void {
  admin.get('/parity', async () => {
    const [stored, counts] = await Promise.all([ctx.termCounts.stored(), ctx.termCounts.totals()]);
    const configured = ctx.config.weekParityAnchors;
    const resolved = resolveTermStarts(configured, configured.length > 0 ? new Map() : counts);
    return parityView({ stored, resolved, counts }, ctx.now());
  });
}

/** Bull Board for the queues (its retry, clean and promote buttons included: admins only). */
async function registerBoard(admin: FastifyInstance, ctx: AdminRouteDeps): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  createBullBoard({
    queues: [
      new BullMQAdapter(ctx.queues.refresh),
      ...[...ctx.queues.pushQueues.values()].map((queue) => new BullMQAdapter(queue)),
      new BullMQAdapter(ctx.queues.schedule),
      new BullMQAdapter(ctx.queues.notify),
      // Telegram's queue always (it predates the channel list); the other channels' when they are on.
      new BullMQAdapter(ctx.queues.telegram),
      ...ctx.notify.channels
        .filter((channel) => channel.on && channel.name !== 'telegram')
        .map((channel) => new BullMQAdapter(ctx.queues[channel.name])),
      new BullMQAdapter(ctx.queues.webhook),
    ],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'timetable-sync' } },
  });
  await admin.register(serverAdapter.registerPlugin(), { prefix: BOARD_PATH.slice('/admin'.length) });
}
