-- Closes every browser session of a subscription but its holder's (store/subscription-store.ts): «sign out on
-- every other device». Only while the holder's index still leads to this subscription. From then on only
-- sessions sign in to the page (`sessionsOnly`: a cookie holding a feed token, from before sessions, no longer
-- does), so that browsers signed in before sessions are signed out too.
--
-- KEYS[1]        the subscription hash
-- KEYS[2]        its session set
-- KEYS[3]        the holder's index (a session's, or a live feed token's)
-- KEYS[4..3+n]   the indexes of the n sessions the caller read
-- ARGV[1]        the subscription id
-- ARGV[2]        now (ms)
-- ARGV[3]        the holder's session hash ('' for a holder by feed token: every session closes)
-- ARGV[4..3+n]   the session hashes the caller read, in KEYS order
--
-- Returns how many sessions it closed, -3 when the holder's index is not live, -1 (GONE) or -2 (STALE: a session
-- opened since the caller read them).
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return -3 end
local sessions = {}
for i = 4, #ARGV do sessions[ARGV[i]] = KEYS[i] end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
local open = redis.call('ZRANGE', KEYS[2], 0, -1)
for _, hash in ipairs(open) do
  if not sessions[hash] then return -2 end
end
local closed = 0
for _, hash in ipairs(open) do
  if hash ~= ARGV[3] then
    redis.call('ZREM', KEYS[2], hash)
    redis.call('DEL', sessions[hash])
    closed = closed + 1
  end
end
redis.call('HSET', KEYS[1], 'sessionsOnly', '1')
return closed
