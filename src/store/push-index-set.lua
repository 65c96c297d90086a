-- Sets entries of a push target's index only while the target exists (store/push-index.ts): a push still
-- running while its target is removed leaves no orphaned index behind.
--
-- KEYS[1]  the target hash
-- KEYS[2]  its index
-- ARGV     event id/digest pairs
--
-- Returns 1 when it set them, 0 when the target is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], unpack(ARGV))
return 1
