/**
 * The admin API's routes of a push-target kind (push-route-kind.ts), the same for every kind, inside the admin
 * scope (prefix `/admin`, admin token checked): `GET <adminBase>` lists targets a page at a time, `GET
 * <adminBase>/:id` shows one with its pending changes, `PATCH <adminBase>/:id` changes the feed options its
 * calendar follows, `DELETE <adminBase>/:id` disconnects one. Registering a target differs per kind (a refresh
 * token, a login and app password) and stays in the kind's own routes.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { requireFetched, type VerifyDeps } from '../jobs/verify-source.ts';
import type { PushTarget, TargetKind } from '../store/push-target-record.ts';
import type { PushTargetStore } from '../store/push-target-store.ts';
import { changePushOptions, type PushOptionsDeps } from '../subscriptions/push-options.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { HttpError } from './errors.ts';
import type { IdParams, OwnedRecords } from './owner-auth.ts';
import { parseOr400, parsePage } from './parse.ts';
import { checkPushOptionsFit, type PushOptionsFitDeps, parsePushOptions } from './push-options-body.ts';
import type { PushRouteKind, RoutedTarget } from './push-route-kind.ts';
import { answerDisconnected } from './push-target-routes.ts';

/** How a kind's targets change their feed options (`changePushOptions` with the kind's store). */
export interface OptionsEditing<T> {
  /** Refuses (400 `INVALID_BODY`) options that do not fit the timetable of `source`. */
  fit(source: SourceKey, options: SubscriberOptions): Promise<void>;
  /** Stores the options and queues the push that applies them; the target as it is now, undefined when gone. */
  change(id: string, options: SubscriberOptions): Promise<T | undefined>;
}

const OPTIONS_HINT =
  'body must be JSON {"options": {"subgroup"?: 2, "exclude"?: ["лекция"], "alarm"?: 15, "title"?: "{subject} {room}"}}';

const optionsBody = z.strictObject(
  { options: z.unknown().refine((value) => value !== undefined, 'is required: {} follows the whole timetable') },
  { error: (issue) => (issue.code === 'invalid_type' ? OPTIONS_HINT : undefined) },
);

/** Registers a kind's list, show, options and disconnect routes on the admin scope. */
export function registerPushAdminRoutes<T extends RoutedTarget, O extends object, E>(
  admin: FastifyInstance,
  kind: PushRouteKind<T, O, E>,
  editing: OptionsEditing<T>,
): void {
  admin.get(kind.adminBase, async (request) => {
    const { offset, limit } = parsePage(request.query);
    const page = await kind.page(offset, limit);
    const targets = await Promise.all(page.targets.map((target) => kind.view(target)));
    return { total: page.total, offset, limit, targets };
  });

  admin.get<IdParams>(`${kind.adminBase}/:id`, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    return kind.view(await knownTarget(kind.records, request.params.id), { pendingChanges: true });
  });

  // `{}` is the whole timetable with our reminders (the calendar's default ones); there is no way back to a
  // target whose reminders are not ours, since the alarms we wrote would then stay for good.
  admin.patch<IdParams>(`${kind.adminBase}/:id`, async (request, reply) => {
    const body = parseOr400(optionsBody, request.body, 'INVALID_BODY');
    const options = parsePushOptions(body.options);
    const target = await knownTarget(kind.records, request.params.id);
    await editing.fit(target.source as SourceKey, options);
    const changed = await editing.change(target.id, options);
    if (changed === undefined) throw kind.records.notFound(request.params.id);
    reply.header('cache-control', 'no-store');
    return kind.view(changed, { pendingChanges: true });
  });

  admin.delete<IdParams>(`${kind.adminBase}/:id`, async (request, reply) => {
    const options = kind.disconnectQuery(request.query);
    checkId(kind.records, request.params.id);
    const result = await kind.disconnect(request.params.id, options);
    if (result === undefined) throw kind.records.notFound(request.params.id);
    return answerDisconnected(request, reply, result);
  });
}

/** The 201 of a target just registered (or found again): where the admin API shows it, never cached. */
export function answerRegistered(
  reply: FastifyReply,
  kind: Pick<PushRouteKind<RoutedTarget>, 'adminBase'>,
  id: string,
): FastifyReply {
  return reply.code(201).header('location', `/admin${kind.adminBase}/${id}`).header('cache-control', 'no-store');
}

/** A 400 unless `id` has the kind's id format. */
function checkId(records: Pick<OwnedRecords<unknown>, 'format' | 'malformed'>, id: string): void {
  if (!records.format.test(id)) throw new HttpError('INVALID_ID', records.malformed);
}

/** The target `id`, or a 400 (malformed) or 404 (unknown). */
async function knownTarget<T>(records: OwnedRecords<T>, id: string): Promise<T> {
  checkId(records, id);
  const target = await records.get(id);
  if (target === undefined) throw records.notFound(id);
  return target;
}

/** What a kind's admin routes check and change options with. */
export type OptionsEditingDeps = PushOptionsFitDeps & PushOptionsDeps & VerifyDeps;

/**
 * {@link OptionsEditing} over `changePushOptions` with the kind's store; the target is read again after the
 * change, as the kind's view wants it.
 */
export function optionsEditing<T extends PushTarget>(
  ctx: OptionsEditingDeps,
  kind: {
    kind: TargetKind;
    targets: Pick<PushTargetStore, 'updateOptions'> & { get(id: string): Promise<T | undefined> };
  },
): OptionsEditing<T> {
  return {
    fit: (source, options) => checkPushOptionsFit(ctx, source, options),
    change: async (id, options) => {
      const changed = await changePushOptions(ctx, kind, id, options);
      return changed === undefined ? undefined : kind.targets.get(id);
    },
  };
}

/**
 * The options of a registration's body (`options`; absent or null: the whole timetable, reminders left to the
 * calendar), checked as a feed query and against the timetable, which is fetched first when it never was.
 */
export async function connectOptions(
  ctx: OptionsEditingDeps,
  source: SourceKey,
  value: unknown,
): Promise<SubscriberOptions | undefined> {
  if (value === undefined || value === null) return undefined;
  const options = parsePushOptions(value);
  await requireFetched(ctx, source);
  await checkPushOptionsFit(ctx, source, options);
  return options;
}
