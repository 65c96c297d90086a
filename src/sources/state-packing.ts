/**
 * Packs the state earlier releases stored as plain JSON text: snapshots, published states, change records and
 * study plans. Both forms are read, and a value is packed when next written, but a source whose timetable does
 * not change keeps its snapshot and published state as they are for good, ten times larger. So once per
 * deployment a worker rewrites every value still in the old form.
 *
 * Each value is replaced only while it is still the one read (a script compares and sets), so a publication
 * racing the rewrite wins; running it twice, or in two processes, rewrites nothing the second time.
 */
import type { ChangeRecord } from '../feeds/publication-diff.ts';
import { isPacked, packJson, unpackJson } from '../lib/packed-json.ts';
import { withLock } from '../lib/redis-lock.ts';
import { scanKeys } from '../lib/redis-scan.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { packChange } from './change-bounds.ts';
import type { RedisKeys } from './keys.ts';
import type { SourceKey } from './source.ts';

/** KEYS: 1 a string. ARGV: 1 the value read, 2 its packed form. Replaces the value only while it is the one read. */
const REPLACE_STRING =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL') return 1 end return 0";

/**
 * KEYS: 1 a list. ARGV: 1 an index, 2 the item read there, 3 its packed form. Replaces the item only while it is
 * the one read (a record pushed meanwhile moves it to another index: it is then left as it is, still readable).
 */
const REPLACE_ITEM =
  "if redis.call('LINDEX', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('LSET', KEYS[1], ARGV[1], ARGV[3]) return 1 end return 0";

/** Keys read at a time. */
const BATCH = 200;

/** How long the packing may hold its lock: a process that died holding it delays the next one this long. */
const LOCK_MS = 10 * 60_000;

/**
 * Packs every value still in the old form, once per deployment (a marker key says it is done), one process at a
 * time. Resolves to the number of values rewritten (a change log's records counted one by one).
 */
export async function packLegacyState(redis: RedisClient, keys: RedisKeys): Promise<number> {
  if ((await redis.exists(keys.statePacked)) === 1) return 0;
  return withLock(redis, keys.lock('state-packing'), LOCK_MS, async () => {
    if ((await redis.exists(keys.statePacked)) === 1) return 0;
    const every = '*' as SourceKey;
    let rewritten = 0;
    for (const pattern of [keys.snapshot(every), keys.published(every), keys.studyPlan(every)])
      for await (const batch of scanKeys(redis, pattern, BATCH)) rewritten += await packStrings(redis, batch);
    for await (const batch of scanKeys(redis, keys.changes(every), BATCH)) rewritten += await packLists(redis, batch);
    await redis.set(keys.statePacked, '1');
    return rewritten;
  });
}

async function packStrings(redis: RedisClient, batch: readonly string[]): Promise<number> {
  const values = await Promise.all(batch.map((key) => redis.getBuffer(key)));
  const replaced = await Promise.all(
    batch.map((key, index) => {
      const value = values[index];
      if (value === null || value === undefined || isPacked(value)) return 0;
      return redis.eval(REPLACE_STRING, 1, key, value, packJson(unpackJson(value)));
    }),
  );
  return replaced.filter((result) => result === 1).length;
}

async function packLists(redis: RedisClient, batch: readonly string[]): Promise<number> {
  const lists = await Promise.all(batch.map((key) => redis.lrangeBuffer(key, 0, -1)));
  const replaced = await Promise.all(
    batch.flatMap((key, index) =>
      (lists[index] ?? []).map((item, position) =>
        isPacked(item)
          ? 0
          : redis.eval(REPLACE_ITEM, 1, key, position, item, packChange(unpackJson<ChangeRecord>(item))),
      ),
    ),
  );
  return replaced.filter((result) => result === 1).length;
}
