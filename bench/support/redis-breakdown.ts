/**
 * Where Redis's memory goes, by kind of key: every key under the service's prefix is scanned and its
 * `MEMORY USAGE` (every nested value counted) added to its kind's total. The kinds are the state of a source
 * (rendered feed, snapshot, published digests, change log, source record, …), the sets that list every
 * source (active, known, stale: one entry per source, so they grow with the sources too), the subscriptions, and
 * BullMQ's keys split into the job schedulers, the jobs it keeps, and the queues' own structures.
 *
 * Each key's bytes also go to the kind of source it belongs to (a group's feed, a teacher's scheduler, a
 * personal subscription's kept job), or to no source (the queues' structures, the indexes): the shared bytes
 * are then apportioned equally per source, so that the cost of a group or teacher is stated apart from the
 * personal subscriptions that make up most of a university's mix.
 */
import type { Redis } from 'ioredis';
import type { Population } from './scale-population.ts';

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

/** The kinds of source a key may belong to (the simulator's employees who teach are the teachers). */
export const SOURCE_CLASSES = ['group', 'teacher', 'personal'] as const;

/** A kind of source. */
export type SourceClass = (typeof SOURCE_CLASSES)[number];

const CLASS_OF: Record<string, SourceClass> = { group: 'group', employee: 'teacher', personal: 'personal' };
/** A source key inside a service key: `feed:group:42`, `study-plan:personal:abc`, `source-targets:employee:7`. */
const SERVICE_SOURCE = /(?:^|:)(group|employee|personal):/;
/** A source token inside a BullMQ key: jobs `group-42-…`, schedulers `repeat:tick-group-42…`, `de:group-42`. */
const QUEUE_SOURCE = /(?:^|[:-])(group|employee|personal)-/;
/** Keys of personal subscriptions that are named by subscription, token or owner rather than by source. */
const PERSONAL_SEGMENTS = new Set([
  'subscription',
  'subscription-token',
  'subscription-tokens',
  'subscription-owner',
  'subscription-owners-indexed',
]);

/**
 * The kind of source `key` under `prefix` belongs to, or undefined when it belongs to none (queue structures,
 * indexes, term counts, the reconciler's scheduler, kept jobs): such bytes are shared by every source. The
 * queues keep the last jobs to finish, a bounded number whatever the sources (src/jobs/queues.ts): which kind
 * of source those refreshed is the order of the last cycle, not a cost of that kind.
 */
export function keySource(key: string, prefix: string): SourceClass | undefined {
  if (!key.startsWith(`${prefix}:`) || keyKind(key, prefix) === 'jobs kept') return undefined;
  const rest = key.slice(prefix.length + 1);
  const segment = rest.split(':')[0] ?? '';
  if (PERSONAL_SEGMENTS.has(segment)) return 'personal';
  // BullMQ's keys are `q:<queue>:<rest>`; the follow-up asks are named by a job id.
  const match =
    segment === 'q'
      ? QUEUE_SOURCE.exec(rest.split(':').slice(2).join(':'))
      : (segment === 'follow-up-asks' ? QUEUE_SOURCE : SERVICE_SOURCE).exec(rest.slice(segment.length + 1));
  return match ? CLASS_OF[match[1] ?? ''] : undefined;
}

/** Bytes and keys of one kind. */
export interface KindUsage {
  bytes: number;
  keys: number;
}

/** What {@link redisBreakdown} found. */
export interface RedisBreakdown {
  byKind: Record<KeyKind, KindUsage>;
  /** Bytes of the keys of each kind of source, and of keys that belong to none (`shared`). */
  bySource: Record<SourceClass | 'shared', number>;
  /**
   * Bytes of the stored feeds' hash fields, by field (`gzip`, `etag`, and `body` or `brotli` while the stored
   * format has them): whatever fields exist are counted, none is assumed.
   */
  feedFields: Record<string, number>;
}

/** Scans every key under `prefix` on one Redis server (a few hundred per round trip) and adds up their memory by kind. */
export async function redisBreakdown(redis: Redis, prefix: string): Promise<RedisBreakdown> {
  const byKind = Object.fromEntries(KEY_KINDS.map((kind) => [kind, { bytes: 0, keys: 0 }])) as Record<
    KeyKind,
    KindUsage
  >;
  const bySource: Record<SourceClass | 'shared', number> = { group: 0, teacher: 0, personal: 0, shared: 0 };
  const feedFields: Record<string, number> = {};
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
    cursor = next;
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.memory('USAGE', key, 'SAMPLES', 0);
    const usage = (await pipeline.exec()) ?? [];
    await addFeedFields(
      redis,
      keys.filter((key) => keyKind(key, prefix) === 'feed'),
      feedFields,
    );
    for (const [index, key] of keys.entries()) {
      const bytes = Number(usage[index]?.[1] ?? 0);
      const usageOf = byKind[keyKind(key, prefix)];
      usageOf.bytes += bytes;
      usageOf.keys += 1;
      bySource[keySource(key, prefix) ?? 'shared'] += bytes;
    }
  } while (cursor !== '0');
  return { byKind, bySource, feedFields };
}

/** Adds the length of every field of the feed hashes `keys` to `fields` (a key that is not a hash adds nothing). */
async function addFeedFields(redis: Redis, keys: readonly string[], fields: Record<string, number>): Promise<void> {
  const names = ((await keys.reduce((pipeline, key) => pipeline.hkeys(key), redis.pipeline()).exec()) ?? []).map(
    ([error, result]) => (error === null && Array.isArray(result) ? (result as string[]) : []),
  );
  const lengths = redis.pipeline();
  const asked: string[] = [];
  for (const [index, key] of keys.entries())
    for (const field of names[index] ?? []) {
      lengths.hstrlen(key, field);
      asked.push(field);
    }
  if (asked.length === 0) return;
  for (const [index, [, length]] of ((await lengths.exec()) ?? []).entries()) {
    const field = asked[index] as string;
    fields[field] = (fields[field] ?? 0) + Number(length ?? 0);
  }
}

/** Redis memory per source, in KB (1,024 bytes). */
export interface PerSourceKB {
  /** Over the groups and teachers: their own keys, plus their share of what no source owns. */
  groupsAndTeachers: number;
  /** Over the personal subscriptions, likewise. */
  personal: number;
  /** Over every source: `used_memory` ÷ sources (or the keys' own total, should `MEMORY USAGE` add up to more). */
  all: number;
}

/**
 * Apportions `used_memory` per source: each kind of source's own keys, plus an equal share per source of
 * what no source owns: the shared keys and whatever `used_memory` holds beyond the keys' `MEMORY USAGE`
 * (the empty server, the keyspace's own tables). Weighted by the population, the two averages give `all`.
 */
export function perSourceKB(
  bySource: Readonly<Record<SourceClass | 'shared', number>>,
  usedBytes: number,
  population: Pick<Population, 'sources' | 'groups' | 'teachers' | 'personal'>,
): PerSourceKB {
  const owned = bySource.group + bySource.teacher + bySource.personal;
  const shared = Math.max(bySource.shared, usedBytes - owned);
  const sharedPerSource = shared / population.sources;
  const publicSources = population.groups + population.teachers;
  const kb = (bytes: number) => bytes / 1024;
  return {
    groupsAndTeachers: kb(
      publicSources === 0 ? Number.NaN : (bySource.group + bySource.teacher) / publicSources + sharedPerSource,
    ),
    personal: kb(population.personal === 0 ? Number.NaN : bySource.personal / population.personal + sharedPerSource),
    all: kb((owned + shared) / population.sources),
  };
}
