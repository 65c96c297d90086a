/**
 * The Lua scripts that keep a subscription, its owner index and its feed tokens consistent: each runs as one
 * atomic step, so two sign-ups of one person racing each other, or a sign-up racing a delete, can never leave
 * two subscriptions for one owner, a token of a deleted subscription, or more live tokens than allowed.
 * Every key a script touches is passed in KEYS (legal on Redis Cluster with a hash-tagged prefix). Scripts
 * that act on a list of tokens read beforehand are guarded by the subscription's `tokenSeq`, which every
 * token issued raises: when it moved meanwhile they change nothing and answer {@link STALE}, and the caller
 * reads again.
 */

/** Answered by a guarded script when the subscription changed since the caller read it. */
export const STALE = -2;

/** Answered when the subscription no longer exists. */
export const GONE = -1;

/**
 * Creates a subscription unless its owner already has one. KEYS: 1 owner index, 2 subscription hash, 3 its
 * token set, 4 the first token's index. ARGV: 1 id, 2 token hash, 3.. hash field/value pairs. Answers the id of
 * the owner's subscription: ARGV[1] when this one was created, another one's when the owner had it already.
 */
export const CREATE_UNLESS_OWNED = `
local existing = redis.call('GET', KEYS[1])
if existing then return existing end
local fields = {}
for i = 3, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[2], unpack(fields))
redis.call('HSET', KEYS[2], 'tokenSeq', 1)
redis.call('ZADD', KEYS[3], 1, ARGV[2])
redis.call('SET', KEYS[4], ARGV[1])
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]`;

/**
 * Issues one more feed token to an existing subscription and stores the credential it was signed up with.
 * KEYS: 1 subscription hash, 2 its token set, 3 the new token's index, 4.. the indexes of the tokens to revoke.
 * ARGV: 1 id, 2 new token hash, 3 expected `tokenSeq`, 4 n tokens to revoke, 5..4+n their hashes, then hash
 * field/value pairs to set. A token from before token sets (the hash's `tokenHash` field) joins the set first,
 * as the oldest. The credential version goes up and `statusReason` goes: the credential was just verified. The
 * group fields go too, and come back with the pairs when the profile just read names a group.
 * Answers how many tokens were revoked, {@link GONE} or {@link STALE}.
 */
export const ISSUE_TOKEN = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if (redis.call('HGET', KEYS[1], 'tokenSeq') or '0') ~= ARGV[3] then return -2 end
local legacy = redis.call('HGET', KEYS[1], 'tokenHash')
if legacy then
  redis.call('ZADD', KEYS[2], 0, legacy)
  redis.call('HDEL', KEYS[1], 'tokenHash')
end
local n = tonumber(ARGV[4])
for i = 1, n do
  redis.call('ZREM', KEYS[2], ARGV[4 + i])
  redis.call('DEL', KEYS[3 + i])
end
local seq = redis.call('HINCRBY', KEYS[1], 'tokenSeq', 1)
redis.call('ZADD', KEYS[2], seq, ARGV[2])
redis.call('SET', KEYS[3], ARGV[1])
redis.call('HINCRBY', KEYS[1], 'credentialVersion', 1)
redis.call('HDEL', KEYS[1], 'statusReason', 'groupId', 'groupName')
local fields = {}
for i = n + 5, #ARGV do fields[#fields + 1] = ARGV[i] end
if #fields > 0 then redis.call('HSET', KEYS[1], unpack(fields)) end
return n`;

/**
 * Revokes one token of a subscription (a token issued for an answer that was never sent). KEYS: 1 token set,
 * 2 the token's index. ARGV: 1 token hash, 2 subscription id. Only while the index still leads to that id.
 */
export const REVOKE_TOKEN = `
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
return redis.call('DEL', KEYS[2])`;

/**
 * Deletes a subscription with its tokens and, if it still points there, its owner index. KEYS: 1 subscription
 * hash, 2 its token set, 3..2+n the token indexes, then optionally the owner index. ARGV: 1 id, 2 expected
 * `tokenSeq`, 3 n. Answers 1 when deleted, 0 when it did not exist, {@link STALE}.
 */
export const DELETE_SUBSCRIPTION = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if (redis.call('HGET', KEYS[1], 'tokenSeq') or '0') ~= ARGV[2] then return -2 end
local n = tonumber(ARGV[3])
for i = 1, n + 2 do redis.call('DEL', KEYS[i]) end
if #KEYS > n + 2 and redis.call('GET', KEYS[#KEYS]) == ARGV[1] then redis.call('DEL', KEYS[#KEYS]) end
return 1`;

/**
 * Replaces one live feed token with a new one (the holder rotates its feed URL). KEYS: 1 subscription hash, 2
 * its token set, 3 the old token's index, 4 the new token's index. ARGV: 1 id, 2 old token hash, 3 new token
 * hash. Only while the old token's index still leads to this subscription; a token from before token sets (the
 * hash's `tokenHash` field) is revoked as well as one in the set. `tokenSeq` goes up, so that guarded scripts
 * that read the token list before know it moved. Answers 1 when rotated, 0 when the old token is not live,
 * {@link GONE}.
 */
export const ROTATE_TOKEN = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return 0 end
redis.call('ZREM', KEYS[2], ARGV[2])
if redis.call('HGET', KEYS[1], 'tokenHash') == ARGV[2] then redis.call('HDEL', KEYS[1], 'tokenHash') end
redis.call('DEL', KEYS[3])
local seq = redis.call('HINCRBY', KEYS[1], 'tokenSeq', 1)
redis.call('ZADD', KEYS[2], seq, ARGV[3])
redis.call('SET', KEYS[4], ARGV[1])
return 1`;

/** Drops an owner index that leads to a subscription that is gone. KEYS: 1 owner index. ARGV: 1 that id. */
export const DROP_OWNER = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;
