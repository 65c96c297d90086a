-- Replaces every feed token of a subscription with one new one (store/subscription-store.ts): the holder of a
-- live token rotates its feed URL, and every old URL, a leaked one included, stops. Only while the holder's
-- index still leads to this subscription; a token from before token sets (the hash's `tokenHash` field) goes
-- too. `tokenSeq` goes up; the rotation is announced.
--
-- KEYS[1]   the subscription hash
-- KEYS[2]   its token set
-- KEYS[3]   the holder's token index
-- KEYS[4]   the new token's index
-- KEYS[5..] the indexes of the live tokens the caller read
-- ARGV[1]   the subscription id
-- ARGV[2]   the `tokenSeq` the caller read
-- ARGV[3]   the new token's hash
-- ARGV[4]   now (ms, the new token's first use)
-- ARGV[5]   the feed-updates channel
-- ARGV[6]   the message announcing the rotation
--
-- Returns 1 when it rotated, 0 when the holder's token is not live, -1 (GONE) or -2 (STALE).
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
return 1
