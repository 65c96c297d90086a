import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { execOrThrow } from '../lib/redis-transaction.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { RedisKeys } from './keys.ts';
import { forgetTermCounts } from './term-counts.ts';

/**
 * Where a source stands. `pending`: never fetched yet; `ok`: the feed is current; `stale`: the last refresh
 * failed and the feed serves the last good data; `not-found`: the upstream says the group or teacher does not
 * exist; `needs-credential`: the upstream rejected a personal subscription's credential;
 * `awaiting-confirmation`: a refresh that would remove most future classes waits for a confirming re-fetch.
 */
export type SourceStatus = 'pending' | 'ok' | 'stale' | 'not-found' | 'needs-credential' | 'awaiting-confirmation';

/** A source's row in the registry. Times are epoch milliseconds. */
export interface SourceState {
  source: SourceKey;
  status: SourceStatus;
  active: boolean;
  activeSince?: number;
  lastRequested?: number;
  lastAttempt?: number;
  lastSuccess?: number;
  /** When the published feed last changed. */
  lastChange?: number;
  lastError?: string;
  /** The failure's class, e.g. `timeout`, `not-found` (see the refresh job's classification). */
  lastErrorKind?: string;
  lastErrorAt?: number;
  consecutiveFailures: number;
  /** First failed refresh since the last success; set while the feed is marked stale. */
  staleSince?: number;
  /** Occurrences in the feed, cancelled ones included, and entries the upstream sent that could not be used. */
  occurrences?: number;
  problems?: number;
  /** A mass deletion waiting for its confirming re-fetch: the digest of the timetable that would be published. */
  pendingHash?: string;
  pendingSince?: number;
}

/** A failed refresh, as recorded on the source. */
export interface FailureRecord {
  now: number;
  kind: string;
  message: string;
  /** A permanent failure sets this status; a transient one leaves the status alone. */
  status?: Extract<SourceStatus, 'not-found' | 'needs-credential'>;
}

/** Marks a registered source stale and answers its staleSince (registry-mark-stale.lua). */
const MARK_STALE_SCRIPT = loadScript(import.meta.dirname, 'registry-mark-stale');

/** How long the upstream's "no such group" is remembered, so repeated requests for it cost no fetch. */
export const MISSING_TTL_SECONDS = 3600;
/**
 * Sources remembered as unknown at once, at most: beyond it, those that would be forgotten soonest go first.
 * First requests for ids nobody vouches for may use at most what `FIRST_REQUESTS_TOTAL` admits in an hour
 * (7,200 at its default), so this bound only matters when a total is raised far: about 0.2 KB each, 4 MB.
 */
export const MAX_MISSING_SOURCES = 20_000;
/** The longest text of the upstream's kept with an unknown source (it is quoted back in a 404). */
const MISSING_TEXT_LENGTH = 200;

/** Remembers an unknown source for a while, within a bound (registry-remember-missing.lua). */
const REMEMBER_MISSING_SCRIPT = loadScript(import.meta.dirname, 'registry-remember-missing');

/** An unknown source's text while it is remembered (registry-missing-reason.lua). */
const MISSING_REASON_SCRIPT = loadScript(import.meta.dirname, 'registry-missing-reason');

const NUMBER_FIELDS = [
  'activeSince',
  'lastRequested',
  'lastAttempt',
  'lastSuccess',
  'lastChange',
  'lastErrorAt',
  'staleSince',
  'occurrences',
  'problems',
  'pendingSince',
] as const;

/** The source registry: one HASH per source plus the active and known indexes. */
export class SourceRegistry {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;

  constructor(redis: RedisClient, keys: RedisKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /**
   * Marks a source as wanted: registers it if new, (re)activates it and records the request. True if it was not active.
   */
  async activate(source: SourceKey, now: number): Promise<boolean> {
    const key = this.keys.source(source);
    const [[, added]] = (await this.redis
      .multi()
      .zadd(this.keys.activeSources, now, source)
      .zadd(this.keys.knownSources, 'NX', now, source)
      .hsetnx(key, 'status', 'pending')
      .hsetnx(key, 'consecutiveFailures', '0')
      .hset(key, 'lastRequested', String(now), 'active', '1')
      .exec()) as [[Error | null, number], ...unknown[]];
    if (added === 1) await this.redis.hset(key, 'activeSince', String(now));
    return added === 1;
  }

  /** Records that a feed of an active source was requested (callers throttle this). */
  async touch(source: SourceKey, now: number): Promise<void> {
    await this.redis
      .multi()
      .zadd(this.keys.activeSources, 'XX', 'GT', now, source)
      .hset(this.keys.source(source), 'lastRequested', String(now))
      .exec();
  }

  /** Stops refreshing a source; its data is kept and served until it is removed. */
  async deactivate(source: SourceKey): Promise<void> {
    await this.redis.multi().zrem(this.keys.activeSources, source).hset(this.keys.source(source), 'active', '0').exec();
  }

  /** Active sources, oldest request first, `limit` at a time from `offset`. */
  async activeSources(offset = 0, limit = 1000): Promise<SourceKey[]> {
    return this.redis.zrange(this.keys.activeSources, String(offset), String(offset + limit - 1));
  }

  /** Every active source, read `pageSize` at a time; a source that moves in the index while paging is listed once. */
  async allActiveSources(pageSize = 1000): Promise<SourceKey[]> {
    const sources = new Set<SourceKey>();
    for (let offset = 0; ; offset += pageSize) {
      const page = await this.activeSources(offset, pageSize);
      for (const source of page) sources.add(source);
      if (page.length < pageSize) return [...sources];
    }
  }

  /** Every registered source (active or not), read `pageSize` at a time. */
  async allKnownSources(pageSize = 1000): Promise<SourceKey[]> {
    const sources = new Set<SourceKey>();
    for (let offset = 0; ; offset += pageSize) {
      const page = await this.redis.zrange(this.keys.knownSources, String(offset), String(offset + pageSize - 1));
      for (const source of page) sources.add(source);
      if (page.length < pageSize) return [...sources];
    }
  }

  /** Active sources nobody requested since `cutoff`. */
  async requestedBefore(cutoff: number, limit = 1000): Promise<SourceKey[]> {
    return this.redis.zrangebyscore(this.keys.activeSources, '-inf', `(${cutoff}`, 'LIMIT', 0, limit);
  }

  /** Whether the source is registered at all. */
  async exists(source: SourceKey): Promise<boolean> {
    return (await this.redis.exists(this.keys.source(source))) === 1;
  }

  /** Whether the source is refreshed on schedule. */
  async isActive(source: SourceKey): Promise<boolean> {
    return (await this.redis.zscore(this.keys.activeSources, source)) !== null;
  }

  /** Whether each of `sources` is refreshed on schedule, in order (one `ZMSCORE`). */
  async activeAmong(sources: readonly SourceKey[]): Promise<boolean[]> {
    if (sources.length === 0) return [];
    const scores = await this.redis.zmscore(this.keys.activeSources, ...sources);
    return scores.map((score) => score !== null);
  }

  /** When each of `sources` was last activated (epoch ms; undefined when not registered), in one round trip. */
  async activeSinceOf(sources: readonly SourceKey[]): Promise<(number | undefined)[]> {
    if (sources.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const source of sources) pipeline.hget(this.keys.source(source), 'activeSince');
    return ((await pipeline.exec()) ?? []).map(([error, value]) => {
      if (error) throw error;
      const since = value === null || value === undefined ? Number.NaN : Number(value);
      return Number.isFinite(since) ? since : undefined;
    });
  }

  /** The source's state; undefined when it is not registered. */
  async get(source: SourceKey): Promise<SourceState | undefined> {
    const fields = await this.redis.hgetall(this.keys.source(source));
    return Object.keys(fields).length === 0 ? undefined : toState(source, fields);
  }

  /** A page of the known sources, in order of first activation, with the total count. */
  async page(offset: number, limit: number): Promise<{ total: number; sources: SourceState[] }> {
    const [total, keys] = await Promise.all([
      this.redis.zcard(this.keys.knownSources),
      this.redis.zrange(this.keys.knownSources, String(offset), String(offset + limit - 1)),
    ]);
    const pipeline = this.redis.pipeline();
    for (const source of keys) pipeline.hgetall(this.keys.source(source));
    const rows = ((await pipeline.exec()) ?? []).map(([, fields], index) =>
      toState(keys[index] as SourceKey, (fields ?? {}) as Record<string, string>),
    );
    return { total, sources: rows };
  }

  /** Number of sources whose feed is marked stale. */
  async staleCount(): Promise<number> {
    return this.redis.scard(this.keys.staleSources);
  }

  /** A fetch succeeded: failures, staleness and any pending confirmation are cleared. */
  async recordSuccess(
    source: SourceKey,
    now: number,
    counts: { occurrences: number; problems: number; changed: boolean },
  ): Promise<void> {
    const key = this.keys.source(source);
    const fields = [
      'status',
      'ok',
      'lastAttempt',
      String(now),
      'lastSuccess',
      String(now),
      'consecutiveFailures',
      '0',
      'occurrences',
      String(counts.occurrences),
      'problems',
      String(counts.problems),
    ];
    if (counts.changed) fields.push('lastChange', String(now));
    await this.redis
      .multi()
      .hset(key, ...fields)
      .hdel(key, 'lastError', 'lastErrorKind', 'lastErrorAt', 'staleSince', 'pendingHash', 'pendingSince')
      .srem(this.keys.staleSources, source)
      .exec();
  }

  /** A fetch failed; the snapshot and feed are left alone. */
  async recordFailure(source: SourceKey, failure: FailureRecord): Promise<void> {
    const key = this.keys.source(source);
    const fields = [
      'lastAttempt',
      String(failure.now),
      'lastError',
      failure.message,
      'lastErrorKind',
      failure.kind,
      'lastErrorAt',
      String(failure.now),
    ];
    if (failure.status) fields.push('status', failure.status);
    await this.redis
      .multi()
      .hset(key, ...fields)
      .hincrby(key, 'consecutiveFailures', 1)
      .exec();
  }

  /** The feed now says it is stale; `since` is kept from the first failure until the next success. Returns `since`. */
  async markStale(source: SourceKey, since: number): Promise<number> {
    const kept = await MARK_STALE_SCRIPT.run(
      this.redis,
      [this.keys.source(source), this.keys.staleSources],
      [String(since), source],
    );
    return kept === null ? since : Number(kept);
  }

  /** A mass deletion is held back until a re-fetch returns the same timetable. */
  async setPending(source: SourceKey, hash: string, now: number): Promise<void> {
    await this.redis.hset(
      this.keys.source(source),
      'status',
      'awaiting-confirmation',
      'pendingHash',
      hash,
      'pendingSince',
      String(now),
      'lastAttempt',
      String(now),
    );
  }

  /**
   * Remembers for {@link MISSING_TTL_SECONDS} that the upstream does not know `source` (its own words, maybe
   * empty, cut to 200 characters), so that requests for it answer 404 without another fetch. At most
   * {@link MAX_MISSING_SOURCES} are remembered: a flood of made-up ids cannot fill Redis with them.
   */
  async rememberMissing(source: SourceKey, upstreamText: string): Promise<void> {
    const { missingSources, missingSourcesExpiry } = this.keys;
    const text = upstreamText.slice(0, MISSING_TEXT_LENGTH);
    const ttlMs = String(MISSING_TTL_SECONDS * 1000);
    await REMEMBER_MISSING_SCRIPT.run(
      this.redis,
      [missingSources, missingSourcesExpiry],
      [source, text, ttlMs, String(MAX_MISSING_SOURCES)],
    );
  }

  /** What the upstream said when it did not know `source`, while that is remembered; undefined otherwise. */
  async missingReason(source: SourceKey): Promise<string | undefined> {
    const { missingSources, missingSourcesExpiry } = this.keys;
    const text = await MISSING_REASON_SCRIPT.run(this.redis, [missingSources, missingSourcesExpiry], [source]);
    return typeof text === 'string' ? text : undefined;
  }

  /**
   * Forgets a source entirely, its entries in the start-date counts included (a deleted subscription, or an
   * unknown source). Throws when any part fails, so that a caller never takes half a removal for done.
   */
  async remove(source: SourceKey): Promise<void> {
    const multi = forgetTermCounts(this.redis.multi(), this.keys, source)
      .zrem(this.keys.activeSources, source)
      .zrem(this.keys.knownSources, source)
      .srem(this.keys.staleSources, source)
      .del(
        this.keys.source(source),
        this.keys.snapshot(source),
        this.keys.published(source),
        this.keys.optionValues(source),
        this.keys.feed(source),
        this.keys.changes(source),
        this.keys.studyPlan(source),
      );
    await execOrThrow(multi);
  }
}

function toState(source: SourceKey, fields: Record<string, string>): SourceState {
  const state: SourceState = {
    source,
    status: (fields.status as SourceStatus | undefined) ?? 'pending',
    active: fields.active === '1',
    consecutiveFailures: Number(fields.consecutiveFailures ?? 0),
  };
  for (const name of NUMBER_FIELDS) {
    const value = fields[name];
    if (value !== undefined) state[name] = Number(value);
  }
  if (fields.lastError !== undefined) state.lastError = fields.lastError;
  if (fields.lastErrorKind !== undefined) state.lastErrorKind = fields.lastErrorKind;
  if (fields.pendingHash !== undefined) state.pendingHash = fields.pendingHash;
  return state;
}
