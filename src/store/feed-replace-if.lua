-- Replaces a stored feed whole only while its ETag is still the expected one, and announces the change
-- (store/feed-store.ts): a write derived from an older publication never overwrites a newer one.
--
-- KEYS[1]   the feed hash
-- KEYS[2]   the feed-updates channel
-- ARGV[1]   the expected ETag
-- ARGV[2]   the source, announced on the channel
-- ARGV[3..] the new feed's field/value pairs
--
-- Returns 1 when it wrote, else 0.
if redis.call('HGET', KEYS[1], 'etag') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('PUBLISH', KEYS[2], ARGV[2])
return 1
