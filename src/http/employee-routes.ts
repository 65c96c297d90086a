/**
 * Teacher lookup (`GET /api/employees?q=`): a cached proxy of the upstream search, so that people can find the
 * id of a teacher's feed. Results are cached in Redis for an hour per lower-cased query.
 */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../runtime/context.ts';
import type { Employee } from '../upstream/directory-schema.ts';
import { UpstreamError, UpstreamRateLimitError, UpstreamTimeoutError } from '../upstream/errors.ts';
import { HttpError } from './errors.ts';

/** Shortest and longest search text, after trimming. */
export const MIN_QUERY_LENGTH = 2;
export const MAX_QUERY_LENGTH = 64;
const CACHE_SECONDS = 3600;

/** Registers `GET /api/employees`. */
export async function registerEmployeeRoutes(app: FastifyInstance, ctx: ServiceContext): Promise<void> {
  app.get<{ Querystring: { q?: string | string[] } }>('/api/employees', async (request, reply) => {
    const query = searchText(request.query.q);
    const key = ctx.keys.employeeSearch(query.toLowerCase());
    const cached = await ctx.redis.get(key);
    if (cached === null) {
      const employees = await search(ctx, query);
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

async function search(ctx: ServiceContext, query: string): Promise<Employee[]> {
  try {
    return await ctx.upstream.searchEmployees(query);
  } catch (error) {
    throw asHttpError(error);
  }
}

/** Upstream failures as gateway errors that keep the upstream's own words (they never hold a credential). */
function asHttpError(error: unknown): unknown {
  if (error instanceof UpstreamRateLimitError) {
    const seconds = Math.max(1, Math.ceil((error.retryAfterMs ?? 10_000) / 1000));
    return new HttpError(503, `the university asked us to slow down: ${error.message}`, {
      'Retry-After': String(seconds),
    });
  }
  if (error instanceof UpstreamTimeoutError)
    return new HttpError(504, `the university did not answer in time: ${error.message}`);
  if (error instanceof UpstreamError)
    return new HttpError(502, `the university's teacher search failed: ${error.message}`);
  return error;
}
