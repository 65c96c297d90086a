-- Gives a subscription its page's own feed URL when it has none (store/subscription-store.ts): a browser signs
-- in to a subscription made before the page had one, through the API, or whose page URL its owner revoked. The
-- new token joins the token set as just used and is not counted against the most live tokens, so issuing it
-- revokes nothing. Raises `tokenSeq` (a guarded script reading the set before this must read again).
--
-- KEYS[1]  the subscription hash
-- KEYS[2]  its token set
-- KEYS[3]  the new token's index
-- ARGV[1]  the subscription id
-- ARGV[2]  the new token's hash
-- ARGV[3]  now (ms)
-- ARGV[4]  the new token, sealed
--
-- Returns 1 when it issued it, 0 when the subscription has a page URL already, -1 (GONE).
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local page = redis.call('HGET', KEYS[1], 'pageTokenHash')
if page and redis.call('ZSCORE', KEYS[2], page) then return 0 end
redis.call('HINCRBY', KEYS[1], 'tokenSeq', 1)
local score = tonumber(ARGV[3])
local top = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if top[2] and tonumber(top[2]) >= score then score = tonumber(top[2]) + 1 end
redis.call('ZADD', KEYS[2], score, ARGV[2])
redis.call('SET', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[1], 'pageToken', ARGV[4], 'pageTokenHash', ARGV[2])
return 1
