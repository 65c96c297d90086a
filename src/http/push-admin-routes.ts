/**
 * The admin API's routes of a push-target kind (push-route-kind.ts), the same for every kind, inside the admin
 * scope (prefix `/admin`, admin token checked): `GET <adminBase>` lists targets a page at a time, `GET
 * <adminBase>/:id` shows one with its pending changes, `DELETE <adminBase>/:id` disconnects one. Registering a
 * target differs per kind (a refresh token, a login and app password) and stays in the kind's own routes.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { HttpError } from './errors.ts';
import type { IdParams, OwnedRecords } from './owner-auth.ts';
import { parsePage } from './parse.ts';
import type { PushRouteKind, RoutedTarget } from './push-route-kind.ts';
import { answerDisconnected } from './push-target-routes.ts';

/** Registers a kind's list, show and disconnect routes on the admin scope. */
export function registerPushAdminRoutes<T extends RoutedTarget, O extends object, E>(
  admin: FastifyInstance,
  kind: PushRouteKind<T, O, E>,
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
