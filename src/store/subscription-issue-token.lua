-- Issues one more feed token to an existing subscription and stores the credential it was signed up with
-- (store/subscription-store.ts). A token set scores each token by when it was last used (its feed fetched;
-- issuing counts as a use, in ms): beyond `max` live tokens the least recently used are revoked. Tokens scored
-- before use times were kept carry their issue number, far below any time: they go first, oldest first. The
-- new token scores above every other (now, or 1 ms past the highest), so that tokens issued within one
-- millisecond still go in issue order. A token from before token sets (the hash's `tokenHash` field) joins the
-- set first, as the least recently used. The page's own URL (the hash's `pageTokenHash`) is neither counted nor
-- revoked here: it is what the personal page shows its signed-in browsers, and a sign-up through the API must
-- not take it away. A revoked token's read record (`read:<hash>`) goes with it. The credential version goes up
-- and `statusReason` goes: the credential was just verified. The group fields go too, and come back with the
-- pairs when the profile just read names a group. A revocation is announced.
--
-- KEYS[1]            the subscription hash
-- KEYS[2]            its token set
-- KEYS[3]            the new token's index
-- KEYS[4..3+n]       the indexes of the n live tokens the caller read
-- ARGV[1]            the subscription id
-- ARGV[2]            the new token's hash
-- ARGV[3]            the `tokenSeq` the caller read
-- ARGV[4]            n
-- ARGV[5..4+n]       the live token hashes, in KEYS order
-- ARGV[5+n]          now (ms)
-- ARGV[6+n]          the most live tokens (`max`)
-- ARGV[7+n..#ARGV-2] hash field/value pairs to set
-- ARGV[#ARGV-1]      the feed-updates channel
-- ARGV[#ARGV]        the message announcing a revocation
--
-- Returns how many tokens it revoked, -1 (GONE) or -2 (STALE: it changed since the caller read it).
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if (redis.call('HGET', KEYS[1], 'tokenSeq') or '0') ~= ARGV[3] then return -2 end
local n = tonumber(ARGV[4])
local index = {}
for i = 1, n do index[ARGV[4 + i]] = KEYS[3 + i] end
local legacy = redis.call('HGET', KEYS[1], 'tokenHash')
if legacy then
  redis.call('ZADD', KEYS[2], 0, legacy)
  redis.call('HDEL', KEYS[1], 'tokenHash')
end
local page = redis.call('HGET', KEYS[1], 'pageTokenHash')
local counted = redis.call('ZCARD', KEYS[2])
if page and redis.call('ZSCORE', KEYS[2], page) then counted = counted - 1 end
local excess = counted + 1 - tonumber(ARGV[6 + n])
local revoke = {}
if excess > 0 then
  for _, hash in ipairs(redis.call('ZRANGE', KEYS[2], 0, excess)) do
    if hash ~= page and #revoke < excess then revoke[#revoke + 1] = hash end
  end
end
for _, hash in ipairs(revoke) do
  if not index[hash] then return -2 end
end
for _, hash in ipairs(revoke) do
  redis.call('ZREM', KEYS[2], hash)
  redis.call('DEL', index[hash])
  redis.call('HDEL', KEYS[1], 'read:' .. hash)
end
redis.call('HINCRBY', KEYS[1], 'tokenSeq', 1)
local score = tonumber(ARGV[5 + n])
local top = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if top[2] and tonumber(top[2]) >= score then score = tonumber(top[2]) + 1 end
redis.call('ZADD', KEYS[2], score, ARGV[2])
redis.call('SET', KEYS[3], ARGV[1])
redis.call('HINCRBY', KEYS[1], 'credentialVersion', 1)
redis.call('HDEL', KEYS[1], 'statusReason', 'groupId', 'groupName')
local fields = {}
for i = n + 7, #ARGV - 2 do fields[#fields + 1] = ARGV[i] end
if #fields > 0 then redis.call('HSET', KEYS[1], unpack(fields)) end
if #revoke > 0 then redis.call('PUBLISH', ARGV[#ARGV - 1], ARGV[#ARGV]) end
return #revoke
