-- Replaces every feed token of a subscription with one new one (store/subscription-store.ts): the holder of a
-- live browser session (or, for a browser signed in before sessions, of a live token) rotates its feed URL, and
-- every old URL, a leaked one included, stops. Only while the holder's index still leads to this subscription;
-- a token from before token sets (the hash's `tokenHash` field) goes too, and so do the read records of the old
-- tokens. The new token becomes the page's own URL (its sealed copy is stored). Every browser session but the
-- holder's is closed in the same step: a browser left signed in elsewhere must not see the new URL. From then on
-- only sessions sign in to the page (`sessionsOnly`: a cookie holding a feed token, from before sessions, no
-- longer does). `tokenSeq` goes up; the rotation is announced.
--
-- KEYS[1]          the subscription hash
-- KEYS[2]          its token set
-- KEYS[3]          the holder's index (a session's, or a live token's, which is among the token indexes too)
-- KEYS[4]          the new token's index
-- KEYS[5]          its session set
-- KEYS[6..5+n]     the indexes of the n sessions the caller read
-- KEYS[6+n..]      the indexes of the live tokens the caller read
-- ARGV[1]          the subscription id
-- ARGV[2]          the `tokenSeq` the caller read
-- ARGV[3]          the new token's hash
-- ARGV[4]          now (ms, the new token's first use)
-- ARGV[5]          the new token, sealed (the page shows it)
-- ARGV[6]          the feed-updates channel
-- ARGV[7]          the message announcing the rotation
-- ARGV[8]          the holder's session hash ('' for a holder by feed token: every session closes)
-- ARGV[9]          n
-- ARGV[10..9+n]    the session hashes the caller read, in KEYS order
--
-- Returns 1 when it rotated, 0 when the holder's index is not live, -1 (GONE) or -2 (STALE: a token issued or a
-- session opened since the caller read them).
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return 0 end
if (redis.call('HGET', KEYS[1], 'tokenSeq') or '0') ~= ARGV[2] then return -2 end
local n = tonumber(ARGV[9])
local sessions = {}
for i = 1, n do sessions[ARGV[9 + i]] = KEYS[5 + i] end
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', ARGV[4])
local open = redis.call('ZRANGE', KEYS[5], 0, -1)
for _, hash in ipairs(open) do
  if not sessions[hash] then return -2 end
end
for _, hash in ipairs(open) do
  if hash ~= ARGV[8] then
    redis.call('ZREM', KEYS[5], hash)
    redis.call('DEL', sessions[hash])
  end
end
for _, hash in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do redis.call('HDEL', KEYS[1], 'read:' .. hash) end
for i = 6 + n, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[1], 'tokenHash')
redis.call('HINCRBY', KEYS[1], 'tokenSeq', 1)
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
redis.call('SET', KEYS[4], ARGV[1])
redis.call('HSET', KEYS[1], 'pageToken', ARGV[5], 'pageTokenHash', ARGV[3], 'sessionsOnly', '1')
redis.call('PUBLISH', ARGV[6], ARGV[7])
return 1
