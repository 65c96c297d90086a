-- What the university said of a source it does not know, while that is remembered (store/registry.ts).
--
-- KEYS[1]  the texts HASH (source -> the university's words)
-- KEYS[2]  the expiry ZSET (source -> when it is forgotten, ms)
-- ARGV[1]  the source
--
-- Returns its text while it is remembered (by Redis TIME), else nil.
local expires = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not expires then return nil end
local t = redis.call('TIME')
if tonumber(expires) <= tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then return nil end
return redis.call('HGET', KEYS[1], ARGV[1])
