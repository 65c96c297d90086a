/**
 * Packs the state earlier releases stored as plain JSON text: snapshots, published states, change records and
 * study plans. Both forms are read, and a value is packed when next written, but a source whose timetable does
 * not change keeps its snapshot and published state as they are for good, ten times larger. So once per
 * deployment a worker rewrites every value still in the old form.
 *
 * Each value is replaced only while it is still the one read (a script compares and sets), so a publication
 * racing the rewrite wins; running it twice, or in two processes, rewrites nothing the second time.
 */
import { loadScript } from '../lib/lua-script.ts';
import { isPacked, packJson, unpackJson } from '../lib/packed-json.ts';
import { tryWithLock } from '../lib/redis-lock.ts';
import { scanKeys } from '../lib/redis-scan.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { ChangeRecord } from '../timetable/publication.ts';
import type { SourceKey } from '../timetable/source.ts';
import { packChange } from './change-bounds.ts';
import type { RedisKeys } from './keys.ts';

/** Replaces a string value only while it is the one read (state-packing-replace-string.lua). */
const REPLACE_STRING = loadScript(import.meta.dirname, 'state-packing-replace-string');

/** Replaces a list item only while it is the one read (state-packing-replace-item.lua). */
const REPLACE_ITEM = loadScript(import.meta.dirname, 'state-packing-replace-item');

/** Keys read at a time. */
const BATCH = 200;

/** How long the packing holds its lock without renewing it: a process that died holding it delays the next one this long. */
const LOCK_MS = 60_000;

/** What a packing run did. */
export interface PackingResult {
  /** Values rewritten in the packed form (a change log's records counted one by one). */
  packed: number;
  /** Keys whose values could not be read in either form (they are left as they are; the next start tries again). */
  unreadable: string[];
  /** False when another process holds the packing (or it was already done): nothing was looked at. */
  ran: boolean;
}

/**
 * Packs every value still in the old form, once per Redis (a marker key says it is done), in one process at a
 * time: a process that finds another packing returns at once instead of waiting, since both forms are read
 * meanwhile. A value in neither form is left alone and reported; the marker is then not set, so that the next
 * start looks again. `stopped` is asked between batches (a closing worker stops early, the marker not set).
 */
export async function packLegacyState(
  redis: RedisClient,
  keys: RedisKeys,
  stopped: () => boolean = () => false,
): Promise<PackingResult> {
  const idle: PackingResult = { packed: 0, unreadable: [], ran: false };
  if ((await redis.exists(keys.statePacked)) === 1) return idle;
  const packing = await tryWithLock(redis, keys.lock('state-packing'), LOCK_MS, async (renew) => {
    if ((await redis.exists(keys.statePacked)) === 1) return idle;
    const every = '*' as SourceKey;
    const result: PackingResult = { packed: 0, unreadable: [], ran: true };
    const batches: [string, (batch: readonly string[], result: PackingResult) => Promise<void>][] = [
      [keys.snapshot(every), (batch) => packStrings(redis, batch, result)],
      [keys.published(every), (batch) => packStrings(redis, batch, result)],
      [keys.studyPlan(every), (batch) => packStrings(redis, batch, result)],
      [keys.changes(every), (batch) => packLists(redis, batch, result)],
    ];
    for (const [pattern, pack] of batches)
      for await (const batch of scanKeys(redis, pattern, BATCH)) {
        if (stopped()) return result;
        await pack(batch, result);
        if (!(await renew())) return result;
      }
    if (result.unreadable.length === 0) await redis.set(keys.statePacked, '1');
    return result;
  });
  return packing ?? idle;
}

/** The packed form of an old value, or undefined (and the key noted) when it is in neither form. */
function repack(
  key: string,
  value: Buffer,
  pack: (value: Buffer) => Buffer,
  result: PackingResult,
): Buffer | undefined {
  try {
    return pack(value);
  } catch {
    if (!result.unreadable.includes(key)) result.unreadable.push(key);
    return undefined;
  }
}

async function packStrings(redis: RedisClient, batch: readonly string[], result: PackingResult): Promise<void> {
  const values = await Promise.all(batch.map((key) => redis.getBuffer(key)));
  const replaced = await Promise.all(
    batch.map((key, index) => {
      const value = values[index];
      if (value === null || value === undefined || isPacked(value)) return 0;
      const packed = repack(key, value, (text) => packJson(unpackJson(text)), result);
      return packed === undefined ? 0 : REPLACE_STRING.run(redis, [key], [value, packed]);
    }),
  );
  result.packed += replaced.filter((outcome) => outcome === 1).length;
}

async function packLists(redis: RedisClient, batch: readonly string[], result: PackingResult): Promise<void> {
  const lists = await Promise.all(batch.map((key) => redis.lrangeBuffer(key, 0, -1)));
  const replaced = await Promise.all(
    batch.flatMap((key, index) =>
      (lists[index] ?? []).map((item, position) => {
        if (isPacked(item)) return 0;
        const packed = repack(key, item, (text) => packChange(unpackJson<ChangeRecord>(text)), result);
        return packed === undefined ? 0 : REPLACE_ITEM.run(redis, [key], [position, item, packed]);
      }),
    ),
  );
  result.packed += replaced.filter((outcome) => outcome === 1).length;
}
