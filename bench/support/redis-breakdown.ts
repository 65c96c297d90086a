/**
 * Where Redis's memory goes, by kind of key: every key under the service's prefix is scanned and its
 * `MEMORY USAGE` (every nested value counted) added to its kind's total. The kinds are the state of a source
 * (rendered feed, snapshot, published digests, change log, source record, …), the sets that list every
 * source (active, known, stale: one entry per source, so they grow with the sources too), the subscriptions, and
 * BullMQ's keys split into the job schedulers, the jobs it keeps, and the queues' own structures.
 */
import type { Redis } from 'ioredis';

/** The kinds of key, in the order they are reported. */
export const KEY_KINDS = [
  'feed',
  'snapshot',
  'published digests',
  'change log',
  'source record',
  'source indexes',
  'option values',
  'study plan',
  'subscription',
  'term counts',
  'job schedulers',
  'jobs kept',
  'queue structures',
  'other',
] as const;

/** A kind of key. */
export type KeyKind = (typeof KEY_KINDS)[number];

/** Per-source keys of the service, by the segment after the prefix. */
const SOURCE_KINDS: Record<string, KeyKind> = {
  feed: 'feed',
  snapshot: 'snapshot',
  published: 'published digests',
  changes: 'change log',
  source: 'source record',
  sources: 'source indexes',
  'push-owed': 'source indexes',
  'option-values': 'option values',
  'study-plan': 'study plan',
  subscription: 'subscription',
  'subscription-token': 'subscription',
  'subscription-tokens': 'subscription',
  'subscription-owner': 'subscription',
  'term-entries': 'term counts',
};

/**
 * BullMQ's keys of a queue that are the queue itself rather than a job (`<queue>:<suffix>`): its lists, sets,
 * events stream, counters and markers. Deduplication keys (`de:<id>`) and metrics belong with them.
 */
const QUEUE_STRUCTURES = new Set([
  'wait',
  'paused',
  'meta',
  'events',
  'active',
  'completed',
  'failed',
  'delayed',
  'prioritized',
  'pc',
  'id',
  'marker',
  'limiter',
  'stalled',
  'stalled-check',
  'waiting-children',
]);

/**
 * The kind of `key` under `prefix` (`REDIS_PREFIX`). BullMQ's keys are `<prefix>:q:<queue>:<rest>`: the job
 * schedulers (`repeat`, `repeat:<id>`) and the next job each has queued (`repeat:<id>:<millis>`) are the
 * schedulers; a named structure is the queue's; anything else is a job kept (its hash, logs, dependencies).
 */
export function keyKind(key: string, prefix: string): KeyKind {
  if (!key.startsWith(`${prefix}:`)) return 'other';
  const rest = key.slice(prefix.length + 1);
  if (rest.startsWith('q:')) {
    const inQueue = rest.slice(2).split(':').slice(1);
    const first = inQueue[0] ?? '';
    if (first === 'repeat') return 'job schedulers';
    if (QUEUE_STRUCTURES.has(first) || first === 'de' || first === 'metrics' || inQueue.length === 0)
      return 'queue structures';
    return 'jobs kept';
  }
  const segment = rest.split(':')[0] ?? '';
  return SOURCE_KINDS[segment] ?? 'other';
}

/** Bytes and keys of one kind. */
export interface KindUsage {
  bytes: number;
  keys: number;
}

/** The forms a feed is stored in (fields of its hash). */
export const FEED_FORMS = ['body', 'gzip', 'brotli'] as const;

/** A form a feed is stored in. */
export type FeedForm = (typeof FEED_FORMS)[number];

/** What {@link redisBreakdown} found. */
export interface RedisBreakdown {
  byKind: Record<KeyKind, KindUsage>;
  /** Bytes of every stored feed's forms: what an API process holds with every feed cached is their sum. */
  feedBytes: Record<FeedForm, number>;
}

/** Scans every key under `prefix` on one Redis server (a few hundred per round trip) and adds up their memory by kind. */
export async function redisBreakdown(redis: Redis, prefix: string): Promise<RedisBreakdown> {
  const byKind = Object.fromEntries(KEY_KINDS.map((kind) => [kind, { bytes: 0, keys: 0 }])) as Record<
    KeyKind,
    KindUsage
  >;
  const feedBytes: Record<FeedForm, number> = { body: 0, gzip: 0, brotli: 0 };
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
    cursor = next;
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.memory('USAGE', key, 'SAMPLES', 0);
    const usage = (await pipeline.exec()) ?? [];
    const feeds = keys.filter((key) => keyKind(key, prefix) === 'feed');
    const lengths = redis.pipeline();
    for (const key of feeds) for (const form of FEED_FORMS) lengths.hstrlen(key, form);
    for (const [index, [, length]] of ((await lengths.exec()) ?? []).entries())
      feedBytes[FEED_FORMS[index % FEED_FORMS.length] as FeedForm] += Number(length ?? 0);
    for (const [index, key] of keys.entries()) {
      const usageOf = byKind[keyKind(key, prefix)];
      usageOf.bytes += Number(usage[index]?.[1] ?? 0);
      usageOf.keys += 1;
    }
  } while (cursor !== '0');
  return { byKind, feedBytes };
}
