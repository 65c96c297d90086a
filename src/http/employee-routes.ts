/**
 * Teacher lookup (`GET /api/employees?q=`): the search of teacher-search.ts (the service's teacher directory,
 * else the university's search, cached and limited) as JSON `{"employees": [...]}`, so that people can find the
 * id of a teacher's feed.
 */
import type { FastifyInstance } from 'fastify';
import type { ClientLimits } from './client-limits.ts';
import { searchTeachers, searchTextOr400, type TeacherSearchDeps } from './teacher-search.ts';

/** Registers `GET /api/employees`. */
export async function registerEmployeeRoutes(
  app: FastifyInstance,
  ctx: TeacherSearchDeps,
  limits: ClientLimits,
): Promise<void> {
  app.get<{ Querystring: { q?: string | string[] } }>('/api/employees', async (request, reply) => {
    const text = searchTextOr400(request.query.q);
    // Upstream failures answer as the error catalog says (502, 503 with Retry-After, 504), in its own words.
    const employees = await searchTeachers(ctx, limits, request.ip, text);
    return reply.type('application/json; charset=utf-8').send(JSON.stringify({ employees }));
  });
}
