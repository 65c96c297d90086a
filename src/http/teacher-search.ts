/**
 * The teacher search as the service offers it, to the JSON lookup (`GET /api/employees`) and to the search on
 * `/` alike: the text trimmed and its spaces collapsed, 2 to 64 characters. The service's own teacher directory
 * answers first (store/teacher-directory.ts: every teacher of a timetable it read and every employee a search
 * found, matched ignoring `ё`/`е` and reading initials); only a text it finds no one for goes to the
 * university's strict search, whose answers are cached in Redis for an hour per lower-cased text and recorded in
 * the directory, and only a cache miss, which costs the university a call, counts against the search limits.
 */
import type { Config } from '../config.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { cachedEmployeeSearch, cacheEmployeeSearch } from '../store/employee-search-cache.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { KnownEmployees } from '../store/known-employees.ts';
import type { TeacherDirectory } from '../store/teacher-directory.ts';
import type { UniversityClient } from '../upstream/client.ts';
import type { Employee } from '../upstream/directory-schema.ts';
import type { ClientLimits } from './client-limits.ts';
import { HttpError } from './errors.ts';

/** Shortest and longest search text, after trimming. */
export const MIN_QUERY_LENGTH = 2;
export const MAX_QUERY_LENGTH = 64;
const CACHE_SECONDS = 3600;
/** Most employees the directory answers with (the university's search answers about as many). */
export const MAX_DIRECTORY_RESULTS = 50;

/**
 * The text of a search: trimmed, runs of spaces as one (the upstream compares that way too); undefined when it
 * is shorter than {@link MIN_QUERY_LENGTH} or longer than {@link MAX_QUERY_LENGTH}.
 */
export function searchText(value: string): string | undefined {
  const text = value.trim().replace(/\s+/g, ' ');
  return text.length < MIN_QUERY_LENGTH || text.length > MAX_QUERY_LENGTH ? undefined : text;
}

/** {@link searchText} of a query parameter, or a 400 saying what is wrong with it. */
export function searchTextOr400(value: string | string[] | undefined): string {
  if (Array.isArray(value))
    throw new HttpError('INVALID_QUERY', {
      en: 'query parameter q is given more than once',
      ru: 'параметр запроса q указан больше одного раза',
    });
  const text = searchText(value ?? '');
  if (text === undefined) {
    const length = (value ?? '').trim().replace(/\s+/g, ' ').length;
    throw new HttpError('INVALID_QUERY', {
      en: `query parameter q must be ${MIN_QUERY_LENGTH} to ${MAX_QUERY_LENGTH} characters long, got ${length}`,
      ru: `параметр запроса q должен быть длиной от ${MIN_QUERY_LENGTH} до ${MAX_QUERY_LENGTH} символов, получено ${length}`,
    });
  }
  return text;
}

/**
 * What a teacher search reads and asks: the teacher directory, its Redis cache, the university (in-request
 * pool), the known teachers.
 */
export interface TeacherSearchDeps {
  readonly config: Pick<Config, 'upstreamRequestWaitMs'>;
  readonly redis: RedisClient;
  readonly keys: Pick<RedisKeys, 'employeeSearch'>;
  readonly requestUpstream: Pick<UniversityClient, 'searchEmployees'>;
  readonly knownEmployees: Pick<KnownEmployees, 'record'>;
  readonly teachers: Pick<TeacherDirectory, 'find' | 'recordFound'>;
}

/**
 * Teachers (and other employees) matching `text` (a {@link searchText}): from the teacher directory, best first,
 * or, when it knows no one `text` names, from the cache or the university. A cache miss is one `search` of `ip`
 * under `limits`; upstream failures and limits throw as the error catalog knows them (RateLimitedError,
 * UpstreamBudgetError, UpstreamError, ...).
 */
export async function searchTeachers(
  ctx: TeacherSearchDeps,
  limits: ClientLimits,
  ip: string,
  text: string,
): Promise<Employee[]> {
  const known = await ctx.teachers.find(text, MAX_DIRECTORY_RESULTS);
  if (known.length > 0) return known;
  const cached = await cachedEmployeeSearch(ctx.redis, ctx.keys, text);
  if (cached !== undefined) return cached;
  // A search that was never sent (the request pool or the upstream budget full) gives its tokens back.
  const employees = await limits.spend('search', ip, () =>
    ctx.requestUpstream.searchEmployees(text, { budgetWaitMs: ctx.config.upstreamRequestWaitMs }),
  );
  await cacheEmployeeSearch(ctx.redis, ctx.keys, text, employees, CACHE_SECONDS);
  // The people found exist: the first request for one of their timetables, which usually follows, goes first;
  // and the directory answers the next search for them, however it is written.
  await ctx.knownEmployees.record(employees.map((employee) => employee.id));
  await ctx.teachers.recordFound(employees);
  return employees;
}
