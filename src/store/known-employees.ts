/**
 * Employee ids the university has shown to exist: teachers named in the timetables the service published (and
 * the teachers whose own timetables it published), and the people its teacher search answered. A first request
 * for one of them is very likely a real teacher's, so it goes before requests for ids nobody vouches for when
 * the overall first-request limit runs short (http/client-limits.ts). Redis holds one SET; the university's
 * staff bounds it, and {@link MAX_KNOWN_EMPLOYEES} bounds it whatever the university sends.
 */
import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';

/** Ids kept at most (a large university has a few thousand teachers): beyond it, new ones are not added. */
export const MAX_KNOWN_EMPLOYEES = 100_000;

/** Adds employee ids while the set has room (known-employees-record.lua). */
const RECORD_SCRIPT = loadScript(import.meta.dirname, 'known-employees-record');

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
    await RECORD_SCRIPT.run(this.redis, [this.keys.knownEmployees], [String(MAX_KNOWN_EMPLOYEES), ...valid]);
  }

  /** Whether the university has named employee `id`. */
  async has(id: number): Promise<boolean> {
    return (await this.redis.sismember(this.keys.knownEmployees, String(id))) === 1;
  }
}
