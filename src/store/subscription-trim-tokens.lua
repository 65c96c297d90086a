-- Revokes the least recently used tokens of a subscription beyond `max` (store/subscription-store.ts): a
-- sign-up let one more in until its new token was safely stored. The page's own URL (`pageTokenHash`) is neither
-- counted nor revoked; a revoked token's read record goes with it. A revocation is announced.
--
-- KEYS[1]        the subscription hash
-- KEYS[2]        its token set
-- KEYS[3..2+n]   the indexes of the n live tokens the caller read
-- ARGV[1]        the `tokenSeq` the caller read
-- ARGV[2]        n
-- ARGV[3..2+n]   the live token hashes, in KEYS order
-- ARGV[3+n]      the most live tokens (`max`)
-- ARGV[4+n]      the feed-updates channel
-- ARGV[5+n]      the message announcing a revocation
--
-- Returns how many tokens it revoked, -1 (GONE) or -2 (STALE: a token to revoke the caller did not read, or
-- `tokenSeq` moved on).
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if (redis.call('HGET', KEYS[1], 'tokenSeq') or '0') ~= ARGV[1] then return -2 end
local n = tonumber(ARGV[2])
local index = {}
for i = 1, n do index[ARGV[2 + i]] = KEYS[2 + i] end
local page = redis.call('HGET', KEYS[1], 'pageTokenHash')
local counted = redis.call('ZCARD', KEYS[2])
if page and redis.call('ZSCORE', KEYS[2], page) then counted = counted - 1 end
local excess = counted - tonumber(ARGV[3 + n])
if excess <= 0 then return 0 end
local revoke = {}
for _, hash in ipairs(redis.call('ZRANGE', KEYS[2], 0, excess)) do
  if hash ~= page and #revoke < excess then revoke[#revoke + 1] = hash end
end
for _, hash in ipairs(revoke) do
  if not index[hash] then return -2 end
end
for _, hash in ipairs(revoke) do
  redis.call('ZREM', KEYS[2], hash)
  redis.call('DEL', index[hash])
  redis.call('HDEL', KEYS[1], 'read:' .. hash)
end
redis.call('PUBLISH', ARGV[#ARGV - 1], ARGV[#ARGV])
return #revoke
