-- Replaces every feed token of a subscription with one new one (store/subscription-store.ts): the holder of a
-- live browser session (or, for a browser signed in before sessions, of a live token) rotates its feed URL, and
-- every old URL, a leaked one included, stops. Only while the holder's index still leads to this subscription;
-- a token from before token sets (the hash's `tokenHash` field) goes too, and so do the read records of the old
-- tokens. The new token becomes the page's own URL (its sealed copy is stored); browser sessions stay.
-- `tokenSeq` goes up; the rotation is announced.
--
-- KEYS[1]   the subscription hash
-- KEYS[2]   its token set
-- KEYS[3]   the holder's index (a session's, or a live token's, which is among KEYS[5..] too)
-- KEYS[4]   the new token's index
-- KEYS[5..] the indexes of the live tokens the caller read
-- ARGV[1]   the subscription id
-- ARGV[2]   the `tokenSeq` the caller read
-- ARGV[3]   the new token's hash
-- ARGV[4]   now (ms, the new token's first use)
-- ARGV[5]   the new token, sealed (the page shows it)
-- ARGV[6]   the feed-updates channel
-- ARGV[7]   the message announcing the rotation
--
-- Returns 1 when it rotated, 0 when the holder's index is not live, -1 (GONE) or -2 (STALE).
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return 0 end
if (redis.call('HGET', KEYS[1], 'tokenSeq') or '0') ~= ARGV[2] then return -2 end
for _, hash in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do redis.call('HDEL', KEYS[1], 'read:' .. hash) end
for i = 5, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[1], 'tokenHash')
redis.call('HINCRBY', KEYS[1], 'tokenSeq', 1)
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
redis.call('SET', KEYS[4], ARGV[1])
redis.call('HSET', KEYS[1], 'pageToken', ARGV[5], 'pageTokenHash', ARGV[3])
redis.call('PUBLISH', ARGV[6], ARGV[7])
return 1
