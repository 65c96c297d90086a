-- Records that a live feed token was used, its feed fetched (store/subscription-store.ts). Only raises the
-- score of a token still in the set: a revoked token is not brought back, and a late write does not move a
-- newer use back. Needs no `tokenSeq` guard: subscription-issue-token.lua reads the scores itself.
--
-- KEYS[1]  the token set
-- ARGV[1]  the token hash
-- ARGV[2]  now (ms)
--
-- Returns 1 when it raised the score, else 0.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
