/**
 * The Lua scripts of `target-store.ts`: guarded updates of a target hash (with the due ZSET and the index
 * in the same step), the atomic removal of a target with everything pointing at it, and the conditional clear
 * of a reconcile request.
 */

/** How an update changes the due ZSET: leave it, remove the target, add it at a score (`nx`: only if absent). */
export type DueChange = { kind: 'keep' } | { kind: 'remove' } | { kind: 'set'; at: number; nx?: boolean };

/** How a guarded update is made. */
export interface TargetUpdate {
  set?: Record<string, string> | undefined;
  remove?: readonly string[] | undefined;
  /** Update only while the stored token version is this one. */
  ifVersion?: number | undefined;
  /** Update only while the target still points at this calendar. */
  ifCalendar?: string | undefined;
  bumpVersion?: boolean | undefined;
  due?: DueChange | undefined;
  /** Delete the target's index (its calendar changed). */
  clearIndex?: boolean | undefined;
  /** When the update happens: becomes `statusAt` if the update changes the status. */
  now?: number | undefined;
}

/**
 * KEYS: 1 target hash, 2 due ZSET, 3 index hash. ARGV: 1 target id; 2 token version guard ('' = none);
 * 3 '1' bumps the token version; 4 due change ('' keep, '-' remove, else a score); 5 '1' = ZADD NX;
 * 6 '1' deletes the index; 7 the time ('' = none), stored as `statusAt` when the status changes; 8 calendar id
 * guard ('' = none); 9 n, then n hash fields to delete, then field/value pairs to set. Returns 1 if it updated,
 * 0 when the target is gone, the version moved on or the calendar changed.
 */
export const UPDATE_TARGET = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'tokenVersion') ~= ARGV[2] then return 0 end
if ARGV[8] ~= '' and redis.call('HGET', KEYS[1], 'calendarId') ~= ARGV[8] then return 0 end
if ARGV[3] == '1' then redis.call('HINCRBY', KEYS[1], 'tokenVersion', 1) end
if ARGV[4] == '-' then redis.call('ZREM', KEYS[2], ARGV[1])
elseif ARGV[4] ~= '' and ARGV[5] == '1' then redis.call('ZADD', KEYS[2], 'NX', ARGV[4], ARGV[1])
elseif ARGV[4] ~= '' then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1]) end
if ARGV[6] == '1' then redis.call('DEL', KEYS[3]) end
local before = redis.call('HGET', KEYS[1], 'status')
local n = tonumber(ARGV[9])
for i = 10, n + 9 do redis.call('HDEL', KEYS[1], ARGV[i]) end
local fields = {}
for i = n + 10, #ARGV do fields[#fields + 1] = ARGV[i] end
if #fields > 0 then redis.call('HSET', KEYS[1], unpack(fields)) end
if ARGV[7] ~= '' and redis.call('HGET', KEYS[1], 'status') ~= before then redis.call('HSET', KEYS[1], 'statusAt', ARGV[7]) end
return 1`;

/**
 * KEYS: 1 target hash, 2 index, 3 source targets SET, 4 all-targets ZSET, 5 due ZSET, 6 user mapping (or a
 * dummy). ARGV: 1 target id. The mapping is deleted only while it still names this target. Returns 1 if the
 * target existed.
 */
export const REMOVE_TARGET = `
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
if redis.call('GET', KEYS[6]) == ARGV[1] then redis.call('DEL', KEYS[6]) end
return existed`;

/** The ARGV of {@link UPDATE_TARGET} for `update` of target `id`. */
export function updateArguments(id: string, update: TargetUpdate): string[] {
  const due = update.due ?? { kind: 'keep' };
  const remove = update.remove ?? [];
  return [
    id,
    update.ifVersion === undefined ? '' : String(update.ifVersion),
    update.bumpVersion ? '1' : '0',
    due.kind === 'keep' ? '' : due.kind === 'remove' ? '-' : String(due.at),
    due.kind === 'set' && due.nx ? '1' : '0',
    update.clearIndex ? '1' : '0',
    update.now === undefined ? '' : String(update.now),
    update.ifCalendar ?? '',
    String(remove.length),
    ...remove,
    ...Object.entries(update.set ?? {}).flat(),
  ];
}

/** KEYS: 1 target hash. ARGV: 1 the reconcile request a push served. Clears it unless a newer one replaced it. */
export const CLEAR_RECONCILE =
  "if redis.call('HGET', KEYS[1], 'reconcileRequested') == ARGV[1] then redis.call('HSET', KEYS[1], 'reconcileRequested', '0') return 1 end return 0";
