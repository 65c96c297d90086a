/**
 * The Lua scripts that keep a subscription, its owner index and its feed tokens consistent: each runs as one
 * atomic step, so two sign-ups of one person racing each other, or a sign-up racing a delete, can never leave
 * two subscriptions for one owner, a token of a deleted subscription, or more live tokens than allowed.
 * Every key a script touches is passed in KEYS (legal on Redis Cluster with a hash-tagged prefix). Scripts
 * that act on a list of tokens read beforehand are guarded by the subscription's `tokenSeq`, which every
 * token issued raises: when it moved meanwhile they change nothing and answer {@link STALE}, and the caller
 * reads again.
 *
 * Scripts that stop feed tokens from working (a revocation, a rotation, a deletion) announce it themselves on
 * the feed-updates channel, inside the same atomic step: the last two ARGV are the channel and the message
 * (`store/feed-updates.ts`). A change is then never made without its announcement, nor announced without
 * being made; PUBLISH from a script is allowed on Redis Cluster too.
 */

/** Answered by a guarded script when the subscription changed since the caller read it. */
export const STALE = -2;

/** Answered when the subscription no longer exists. */
export const GONE = -1;

/**
 * Creates a subscription unless its owner already has one. KEYS: 1 owner index, 2 subscription hash, 3 its
 * token set, 4 the first token's index. ARGV: 1 id, 2 token hash, 3 now (ms, the token's first use), 4.. hash
 * field/value pairs. Answers the id of the owner's subscription: ARGV[1] when this one was created, another
 * one's when the owner had it already.
 */
export const CREATE_UNLESS_OWNED = `
local existing = redis.call('GET', KEYS[1])
if existing then return existing end
local fields = {}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[2], unpack(fields))
redis.call('HSET', KEYS[2], 'tokenSeq', 1)
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[2])
redis.call('SET', KEYS[4], ARGV[1])
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]`;

/**
 * Issues one more feed token to an existing subscription and stores the credential it was signed up with. A
 * token set scores each token by when it was last used (its feed fetched; issuing counts as a use, in ms):
 * beyond `max` live tokens the least recently used are revoked. Tokens scored before use times were kept
 * carry their issue number, far below any time: they go first, oldest first. KEYS: 1 subscription hash, 2 its
 * token set, 3 the new token's index, 4..3+n the indexes of the n live tokens the caller read. ARGV: 1 id,
 * 2 new token hash, 3 expected `tokenSeq`, 4 n, 5..4+n the live token hashes (in KEYS order), 5+n now,
 * 6+n max, then hash field/value pairs to set. The new token scores above every other (now, or 1 ms past the
highest), so that tokens issued within one millisecond still go in issue order. A token from before token sets (the hash's `tokenHash` field)
 * joins the set first, as the least recently used. The credential version goes up and `statusReason` goes: the
 * credential was just verified. The group fields go too, and come back with the pairs when the profile just
 * read names a group. Announces a revocation (last two ARGV: channel, message). Answers how many tokens were
 * revoked, {@link GONE} or {@link STALE}.
 */
export const ISSUE_TOKEN = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if (redis.call('HGET', KEYS[1], 'tokenSeq') or '0') ~= ARGV[3] then return -2 end
local n = tonumber(ARGV[4])
local index = {}
for i = 1, n do index[ARGV[4 + i]] = KEYS[3 + i] end
local legacy = redis.call('HGET', KEYS[1], 'tokenHash')
if legacy then
  redis.call('ZADD', KEYS[2], 0, legacy)
  redis.call('HDEL', KEYS[1], 'tokenHash')
end
local excess = redis.call('ZCARD', KEYS[2]) + 1 - tonumber(ARGV[6 + n])
local revoke = {}
if excess > 0 then revoke = redis.call('ZRANGE', KEYS[2], 0, excess - 1) end
for _, hash in ipairs(revoke) do
  if not index[hash] then return -2 end
end
for _, hash in ipairs(revoke) do
  redis.call('ZREM', KEYS[2], hash)
  redis.call('DEL', index[hash])
end
redis.call('HINCRBY', KEYS[1], 'tokenSeq', 1)
local score = tonumber(ARGV[5 + n])
local top = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if top[2] and tonumber(top[2]) >= score then score = tonumber(top[2]) + 1 end
redis.call('ZADD', KEYS[2], score, ARGV[2])
redis.call('SET', KEYS[3], ARGV[1])
redis.call('HINCRBY', KEYS[1], 'credentialVersion', 1)
redis.call('HDEL', KEYS[1], 'statusReason', 'groupId', 'groupName')
local fields = {}
for i = n + 7, #ARGV - 2 do fields[#fields + 1] = ARGV[i] end
if #fields > 0 then redis.call('HSET', KEYS[1], unpack(fields)) end
if #revoke > 0 then redis.call('PUBLISH', ARGV[#ARGV - 1], ARGV[#ARGV]) end
return #revoke`;

/**
 * Revokes the least recently used tokens of a subscription beyond `max` (a sign-up let one more in until its
 * new token was safely stored). KEYS: 1 subscription hash, 2 its token set, 3..2+n the indexes of the n live
 * tokens the caller read. ARGV: 1 expected `tokenSeq`, 2 n, 3..2+n the live token hashes (in KEYS order),
 * 3+n max, 4+n channel, 5+n message (announced when it revoked any). Answers how many it revoked, {@link GONE}
 * or {@link STALE} (a token to revoke the caller did not read).
 */
export const TRIM_TOKENS = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if (redis.call('HGET', KEYS[1], 'tokenSeq') or '0') ~= ARGV[1] then return -2 end
local n = tonumber(ARGV[2])
local index = {}
for i = 1, n do index[ARGV[2 + i]] = KEYS[2 + i] end
local excess = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[3 + n])
if excess <= 0 then return 0 end
local revoke = redis.call('ZRANGE', KEYS[2], 0, excess - 1)
for _, hash in ipairs(revoke) do
  if not index[hash] then return -2 end
end
for _, hash in ipairs(revoke) do
  redis.call('ZREM', KEYS[2], hash)
  redis.call('DEL', index[hash])
end
redis.call('PUBLISH', ARGV[#ARGV - 1], ARGV[#ARGV])
return #revoke`;

/**
 * Records that a live token was used (its feed fetched) at ARGV[2] ms. KEYS: 1 token set. ARGV: 1 token hash,
 * 2 now. Only raises the score of a token still in the set: a revoked token is not brought back, and a late
 * write does not move a newer use back. Needs no `tokenSeq` guard: {@link ISSUE_TOKEN} reads the scores itself.
 */
export const TOUCH_TOKEN = `
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1`;

/**
 * Revokes one token of a subscription (a token issued for an answer that was never sent). KEYS: 1 token set,
 * 2 the token's index. ARGV: 1 token hash, 2 subscription id, 3 channel, 4 message. Only while the index still
 * leads to that id; then announced. Answers 1 when revoked, else 0.
 */
export const REVOKE_TOKEN = `
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1`;

/**
 * Deletes a subscription with its tokens and, if it still points there, its owner index. KEYS: 1 subscription
 * hash, 2 its token set, 3..2+n the token indexes, then optionally the owner index. ARGV: 1 id, 2 expected
 * `tokenSeq`, 3 n, 4 channel, 5 message (announced when deleted). Answers 1 when deleted, 0 when it did not
 * exist, {@link STALE}.
 */
export const DELETE_SUBSCRIPTION = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if (redis.call('HGET', KEYS[1], 'tokenSeq') or '0') ~= ARGV[2] then return -2 end
local n = tonumber(ARGV[3])
for i = 1, n + 2 do redis.call('DEL', KEYS[i]) end
if #KEYS > n + 2 and redis.call('GET', KEYS[#KEYS]) == ARGV[1] then redis.call('DEL', KEYS[#KEYS]) end
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1`;

/**
 * Replaces every feed token of a subscription with one new one (the holder of a live token rotates its feed
 * URL: every old URL, a leaked one included, stops). KEYS: 1 subscription hash, 2 its token set, 3 the holder's
 * token index, 4 the new token's index, 5.. the indexes of the live tokens the caller read. ARGV: 1 id, 2
 * expected `tokenSeq`, 3 new token hash, 4 now (ms, the new token's first use), 5 channel, 6 message (announced
 * when rotated). Only while the holder's index
 * still leads to this subscription; a token from before token sets (the hash's `tokenHash` field) goes too.
 * `tokenSeq` goes up. Answers 1 when rotated, 0 when the holder's token is not live, {@link GONE} or
 * {@link STALE}.
 */
export const ROTATE_TOKENS = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return 0 end
if (redis.call('HGET', KEYS[1], 'tokenSeq') or '0') ~= ARGV[2] then return -2 end
redis.call('DEL', KEYS[3])
for i = 5, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[1], 'tokenHash')
redis.call('HINCRBY', KEYS[1], 'tokenSeq', 1)
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
redis.call('SET', KEYS[4], ARGV[1])
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1`;

/** Drops an owner index that leads to a subscription that is gone. KEYS: 1 owner index. ARGV: 1 that id. */
export const DROP_OWNER = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;
