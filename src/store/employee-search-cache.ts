/**
 * Cached answers of the university's teacher search, by the lower-cased query, for a while: a search typed
 * again (or by someone else) does not spend the upstream budget.
 */
import type { RedisClient } from '../lib/redis-target.ts';
import type { Employee } from '../upstream/directory-schema.ts';
import type { RedisKeys } from './keys.ts';

/** The cached answer to `query`, or undefined when none is kept. */
export async function cachedEmployeeSearch(
  redis: RedisClient,
  keys: Pick<RedisKeys, 'employeeSearch'>,
  query: string,
): Promise<Employee[] | undefined> {
  const cached = await redis.get(keys.employeeSearch(query.toLowerCase()));
  return cached === null ? undefined : (JSON.parse(cached) as { employees: Employee[] }).employees;
}

/** Keeps `employees` as the answer to `query` for `seconds`. */
export async function cacheEmployeeSearch(
  redis: RedisClient,
  keys: Pick<RedisKeys, 'employeeSearch'>,
  query: string,
  employees: readonly Employee[],
  seconds: number,
): Promise<void> {
  await redis.set(keys.employeeSearch(query.toLowerCase()), JSON.stringify({ employees }), 'EX', seconds);
}
