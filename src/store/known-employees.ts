/**
 * Employee ids the university has shown to exist: teachers named in the timetables the service published (and
 * the teachers whose own timetables it published), and the people its teacher search answered. A first request
 * for one of them is very likely a real teacher's, so it goes before requests for ids nobody vouches for when
 * the overall first-request limit runs short (http/client-limits.ts). Redis holds one SET; the university's
 * staff bounds it, and {@link MAX_KNOWN_EMPLOYEES} bounds it whatever the university sends.
 */
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';

/** Ids kept at most (a large university has a few thousand teachers): beyond it, new ones are not added. */
export const MAX_KNOWN_EMPLOYEES = 100_000;

/** KEYS: the SET. ARGV: the most members kept, then ids. Adds the ids while the set has room; answers how many it added. */
const RECORD_SCRIPT = `
local room = tonumber(ARGV[1]) - redis.call('SCARD', KEYS[1])
local added = 0
for i = 2, #ARGV do
  if room <= 0 then break end
  local new = redis.call('SADD', KEYS[1], ARGV[i])
  added, room = added + new, room - new
end
return added`;

/** The employee ids known to exist, in Redis. */
export class KnownEmployees {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;

  constructor(redis: RedisClient, keys: RedisKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /** Records employee ids the university named (ids that are not positive integers are left out). */
  async record(ids: Iterable<number | null | undefined>): Promise<void> {
    const valid = new Set<string>();
    for (const id of ids) if (typeof id === 'number' && Number.isSafeInteger(id) && id > 0) valid.add(String(id));
    if (valid.size === 0) return;
    await this.redis.eval(RECORD_SCRIPT, 1, this.keys.knownEmployees, String(MAX_KNOWN_EMPLOYEES), ...valid);
  }

  /** Whether the university has named employee `id`. */
  async has(id: number): Promise<boolean> {
    return (await this.redis.sismember(this.keys.knownEmployees, String(id))) === 1;
  }
}
