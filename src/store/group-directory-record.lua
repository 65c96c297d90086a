-- Sets one group's name unless it has that name already; a change raises the directory's version
-- (store/group-directory.ts).
--
-- KEYS[1]  the directory hash (id -> name)
-- KEYS[2]  the version counter
-- ARGV[1]  the group id
-- ARGV[2]  its name
--
-- Returns 1 when it changed the directory, else 0.
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('INCR', KEYS[2])
return 1
