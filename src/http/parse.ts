/**
 * Reading what a request sends (bodies, query strings) with zod: one way to turn a schema's issues into a 400
 * that names each bad field, and the paging parameters every listing takes.
 */
import { z } from 'zod';
import { HttpError } from './errors.ts';

/** Zod issues as one line, each prefixed by its field (`limit: must be at least 1`); values are never quoted. */
function issuesText(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.join('.')}: ${issue.message}`))
    .join('; ');
}

/** `input` read by `schema`, or a 400 naming every bad field. */
export function parseOr400<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new HttpError(400, issuesText(parsed.error));
  return parsed.data;
}

/** `?offset=&limit=` of a listing: offset from 0, limit from 1 to 500 (default 100). */
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

/** A listing's page, or a 400 naming the bad parameter. */
export function parsePage(query: unknown): { offset: number; limit: number } {
  return parseOr400(pageQuery, query ?? {});
}
