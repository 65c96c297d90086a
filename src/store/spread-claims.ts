/**
 * Who spreads a change. One change of a class shows in several timetables (its groups', its teachers', its
 * students'), and whichever of their refreshes sees it first queues the refreshes of the others. One key per
 * class holds the version last spread (what the class became, or `gone`): a refresh spreads a version other
 * than the stored one and stores its own, compare and set in one script for all the classes it saw change. The
 * refreshes it queued then see the version stored already and queue nothing (no ping-pong between a group and
 * its students), while any later version, a return to an earlier one included, is spread again.
 *
 * The stored value also lists the groups whose students the spread reached: a group whose name the finder could
 * not resolve was not reached, and its own refresh, finding the version stored, still tells its own students.
 */
import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';

const DECIDE = loadScript(import.meta.dirname, 'spread-claims-decide');

/** What a disappeared class is recorded as. */
export const GONE = 'gone';

/** One class a refresh saw change. */
export interface SeenChange {
  readonly classId: number;
  /** What the class became: its entry digest, hex, or {@link GONE}. */
  readonly version: string;
  /** Its digest, hex, as the finder showed it before; undefined when the class is new to the finder. */
  readonly lost?: string | undefined;
  /**
   * Whether to store the version as spread. Not for a disappearance that only the finder's own view may explain
   * (a student who changed subgroup, a teacher who lost the class to another): stored, it would hide the class's
   * later cancellation from everyone.
   */
  readonly record: boolean;
  /** The groups whose students the finder's spread reaches. */
  readonly covers: readonly number[];
}

/**
 * What the finder does about a class: `spread` it to every source that shows it; `members`, to its own students
 * only (a group the spread of this version did not reach); `none`.
 */
export type SpreadVerdict = 'spread' | 'members' | 'none';

const VERDICTS: readonly SpreadVerdict[] = ['none', 'spread', 'members'];

/** The last spread version of each class, in Redis: one short string key per class, with a TTL. */
export class SpreadClaims {
  readonly #redis: RedisClient;
  readonly #keys: Pick<RedisKeys, 'spreadClaim'>;

  constructor(redis: RedisClient, keys: Pick<RedisKeys, 'spreadClaim'>) {
    this.#redis = redis;
    this.#keys = keys;
  }

  /**
   * Decides, in order, what the finder (a group's id, or undefined for a teacher or a student) spreads of
   * `changes`, and stores what it spreads for `ttlMs` (one round trip). A class is spread when its stored
   * version differs from the one seen, except a disappearance of a version the class has moved on from since.
   */
  async decide(
    changes: readonly SeenChange[],
    finderGroup: number | undefined,
    ttlMs: number,
  ): Promise<SpreadVerdict[]> {
    if (changes.length === 0) return [];
    const keys = changes.map((change) => this.#keys.spreadClaim(change.classId));
    const args = changes.flatMap((change) => [
      change.version,
      change.lost ?? '',
      change.record ? '1' : '0',
      change.covers.join(' '),
    ]);
    const reply = (await DECIDE.run(this.#redis, keys, [
      Math.max(1, Math.round(ttlMs)),
      finderGroup ?? '',
      ...args,
    ])) as number[];
    return reply.map((verdict) => VERDICTS[verdict] ?? 'none');
  }
}
