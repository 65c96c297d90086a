-- Stores the MAX poller's marker (store/max-poll-marker.ts) only while the poll lock is still the caller's: a
-- poller that lost the lock (a long pause, another process took over) never moves the marker the new holder
-- reads, so what it handled after losing the lock is asked for again, and dropped there as a copy.
--
-- KEYS[1]  the poll lock
-- KEYS[2]  the marker
-- ARGV[1]  the caller's lock owner
-- ARGV[2]  the marker to store
--
-- Returns 1 when it stored the marker, 0 when the lock is not the caller's.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
return 1
