-- The owners whose credentials the university accepted from one client (store/known-credentials.ts): a ZSET of
-- their keyed digests scored by when (ms, Redis TIME), kept for a window, at most `max` of them (the oldest go
-- first). It expires once its newest entry leaves the window.
--
-- KEYS[1]  the client's set
-- ARGV[1]  'add' (then ARGV[4] is the digest) or 'count'
-- ARGV[2]  the window (ms)
-- ARGV[3]  the most entries kept
-- ARGV[4]  the owner's digest
--
-- Returns how many distinct owners it holds within the window (after the add).
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local window = tonumber(ARGV[2])
if ARGV[1] == 'add' then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
  if excess > 0 then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, excess - 1) end
  redis.call('PEXPIRE', KEYS[1], window)
end
return redis.call('ZCOUNT', KEYS[1], '(' .. (now - window), '+inf')
