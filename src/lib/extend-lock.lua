-- Extends a lock only while this owner holds it (lib/redis-lock.ts).
--
-- KEYS[1]  the lock
-- ARGV[1]  its owner
-- ARGV[2]  its new time to live, in ms
--
-- Returns 1 when it extended the lock, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0
