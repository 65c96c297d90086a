-- Removes entries of a push target's index only while the target exists (store/push-index.ts): a push
-- still running while its target is removed must learn that it is, as a set would tell it.
--
-- KEYS[1]  the target hash
-- KEYS[2]  its index
-- ARGV     event (resource) ids
--
-- Returns 1 when it removed them (or they were not there), 0 when the target is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[2], unpack(ARGV))
return 1
