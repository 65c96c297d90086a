-- Releases a lock only while this owner holds it (lib/redis-lock.ts): never one someone else took after
-- ours expired.
--
-- KEYS[1]  the lock
-- ARGV[1]  its owner
--
-- Returns 1 when it deleted the lock, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0
