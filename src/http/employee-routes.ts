/**
 * Teacher lookup (`GET /api/employees?q=`): a cached proxy of the upstream search, so that people can find the
 * id of a teacher's feed. Results are cached in Redis for an hour per lower-cased query.
 */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../runtime/context.ts';
import { ClientLimits } from './client-limits.ts';
import { HttpError } from './errors.ts';

/** Shortest and longest search text, after trimming. */
export const MIN_QUERY_LENGTH = 2;
export const MAX_QUERY_LENGTH = 64;
const CACHE_SECONDS = 3600;

/** Registers `GET /api/employees`. */
export async function registerEmployeeRoutes(app: FastifyInstance, ctx: ServiceContext): Promise<void> {
  const limits = new ClientLimits(ctx);
  app.get<{ Querystring: { q?: string | string[] } }>('/api/employees', async (request, reply) => {
    const query = searchText(request.query.q);
    const key = ctx.keys.employeeSearch(query.toLowerCase());
    const cached = await ctx.redis.get(key);
    if (cached === null) {
      // Only a miss costs the university a call, so only a miss counts against the search limits; a search that
      // was never sent (the request pool or the upstream budget full) gives its tokens back.
      // Upstream failures answer as the error catalog says (502, 503 with Retry-After, 504), in its own words.
      const employees = await limits.spend('search', request.ip, () =>
        ctx.requestUpstream.searchEmployees(query, { budgetWaitMs: ctx.config.upstreamRequestWaitMs }),
      );
      const body = JSON.stringify({ employees });
      await ctx.redis.set(key, body, 'EX', CACHE_SECONDS);
      return reply.type('application/json; charset=utf-8').send(body);
    }
    return reply.type('application/json; charset=utf-8').send(cached);
  });
}

/** The query, trimmed and with runs of spaces collapsed (the upstream compares that way too). */
function searchText(value: string | string[] | undefined): string {
  if (Array.isArray(value)) throw new HttpError(400, 'query parameter q is given more than once');
  const text = (value ?? '').trim().replace(/\s+/g, ' ');
  if (text.length < MIN_QUERY_LENGTH || text.length > MAX_QUERY_LENGTH) {
    throw new HttpError(
      400,
      `query parameter q must be ${MIN_QUERY_LENGTH} to ${MAX_QUERY_LENGTH} characters long, got ${text.length}`,
    );
  }
  return text;
}
