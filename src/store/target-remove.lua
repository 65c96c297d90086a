-- Removes a push target with everything pointing at it, in one step (store/push-target-store.ts).
--
-- KEYS[1]  the target hash
-- KEYS[2]  its index
-- KEYS[3]  its source's targets SET
-- KEYS[4]  the all-targets ZSET
-- KEYS[5]  the due ZSET
-- KEYS[6]  the owner's mapping to the target (Google's user; or a dummy key), deleted only while it names it
-- ARGV[1]  the target id
--
-- Returns 1 if the target existed, else 0.
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
if redis.call('GET', KEYS[6]) == ARGV[1] then redis.call('DEL', KEYS[6]) end
return existed
