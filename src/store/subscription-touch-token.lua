-- Records that a live feed token was used, its feed fetched (store/subscription-store.ts), and by what kind of
-- client. Only for a token still in the set: a revoked token is not brought back, and a late write does not move
-- a newer use back. The read record is one hash field per token (`read:<hash>` = `<ms> <client>`), bounded by
-- the tokens themselves. Needs no `tokenSeq` guard: subscription-issue-token.lua reads the scores itself.
--
-- KEYS[1]  the token set
-- KEYS[2]  the subscription hash
-- ARGV[1]  the token hash
-- ARGV[2]  now (ms)
-- ARGV[3]  the client's kind (a word of a fixed list, never a raw header)
--
-- Returns 1 when it raised the score, else 0.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return 0 end
local field = 'read:' .. ARGV[1]
local last = redis.call('HGET', KEYS[2], field)
if not last or tonumber(string.match(last, '^%d+')) <= tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[2], field, ARGV[2] .. ' ' .. ARGV[3])
end
if tonumber(score) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
