-- Opens a browser session of a subscription (store/subscription-store.ts): a sign-in on the page. Sessions are
-- not feed URLs: they live in a set of their own, each expiring on its own, at most `max` of them; beyond that
-- the one expiring first (the oldest) is closed. Expired members are dropped from the set (their indexes
-- expired by themselves).
--
-- KEYS[1]        the subscription hash
-- KEYS[2]        its session set
-- KEYS[3]        the new session's index
-- KEYS[4..3+n]   the indexes of the n sessions the caller read
-- ARGV[1]        the subscription id
-- ARGV[2]        the new session's hash
-- ARGV[3]        now (ms)
-- ARGV[4]        the session's lifetime (ms)
-- ARGV[5]        the most sessions (`max`)
-- ARGV[6..5+n]   the session hashes the caller read, in KEYS order
--
-- Returns how many sessions it closed, -1 (GONE) or -2 (STALE: one to close the caller did not read).
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local now = tonumber(ARGV[3])
local lifetime = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local index = {}
for i = 6, #ARGV do index[ARGV[i]] = KEYS[i - 2] end
local excess = redis.call('ZCARD', KEYS[2]) + 1 - tonumber(ARGV[5])
local close = {}
if excess > 0 then close = redis.call('ZRANGE', KEYS[2], 0, excess - 1) end
for _, hash in ipairs(close) do
  if not index[hash] then return -2 end
end
for _, hash in ipairs(close) do
  redis.call('ZREM', KEYS[2], hash)
  redis.call('DEL', index[hash])
end
redis.call('ZADD', KEYS[2], now + lifetime, ARGV[2])
redis.call('PEXPIRE', KEYS[2], lifetime)
redis.call('SET', KEYS[3], ARGV[1], 'PX', lifetime)
return #close
