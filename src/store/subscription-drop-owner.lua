-- Drops an owner index that leads to a subscription that is gone (store/subscription-store.ts), unless it
-- leads to another one by now.
--
-- KEYS[1]  the owner index
-- ARGV[1]  the id of the subscription that is gone
--
-- Returns 1 when it dropped the index, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
