-- Deletes a subscription with its tokens and, if it still points there, its owner index
-- (store/subscription-store.ts); then announced.
--
-- KEYS[1]        the subscription hash
-- KEYS[2]        its token set
-- KEYS[3..2+n]   the token indexes
-- KEYS[3+n]      the owner index (optional)
-- ARGV[1]        the subscription id
-- ARGV[2]        the `tokenSeq` the caller read
-- ARGV[3]        n
-- ARGV[4]        the feed-updates channel
-- ARGV[5]        the message announcing the deletion
--
-- Returns 1 when it deleted the subscription, 0 when it did not exist, -2 (STALE).
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if (redis.call('HGET', KEYS[1], 'tokenSeq') or '0') ~= ARGV[2] then return -2 end
local n = tonumber(ARGV[3])
for i = 1, n + 2 do redis.call('DEL', KEYS[i]) end
if #KEYS > n + 2 and redis.call('GET', KEYS[#KEYS]) == ARGV[1] then redis.call('DEL', KEYS[#KEYS]) end
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
