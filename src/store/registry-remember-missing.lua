-- Remembers that the university does not know a source, until Redis TIME + ttl (store/registry.ts). Drops up
-- to 100 entries already expired, then those expiring soonest beyond the most kept. Both keys expire a ttl
-- after the last write, when every entry has.
--
-- KEYS[1]  the texts HASH (source -> the university's words)
-- KEYS[2]  the expiry ZSET (source -> when it is forgotten, ms)
-- ARGV[1]  the source
-- ARGV[2]  the university's words
-- ARGV[3]  ttl (ms)
-- ARGV[4]  the most entries kept
--
-- Returns 1.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl, most = tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
for _, source in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 100)) do
  redis.call('ZREM', KEYS[2], source)
  redis.call('HDEL', KEYS[1], source)
end
local excess = redis.call('ZCARD', KEYS[2]) - most
if excess > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[2], excess)
  for i = 1, #popped, 2 do redis.call('HDEL', KEYS[1], popped[i]) end
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
