-- Makes a CalDAV server host cool down for at least the given time (store/caldav-host-budget.ts): a longer
-- cool-down already running is kept, a shorter one is extended.
--
-- KEYS[1]  the host's cool-down STRING
-- ARGV[1]  the cool-down (ms, > 0)
--
-- Returns the ms the cool-down has left now.
local wanted = tonumber(ARGV[1])
local left = redis.call('PTTL', KEYS[1])
if left >= wanted then return left end
redis.call('SET', KEYS[1], '1', 'PX', wanted)
return wanted
