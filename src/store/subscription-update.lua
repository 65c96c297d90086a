-- Updates a subscription hash only if it exists (an update racing a delete must not bring back a half
-- subscription) and, when a version is given, only while its credential version is still that one (a missing
-- version counts as 0) (store/subscription-store.ts).
--
-- KEYS[1]   the subscription hash
-- ARGV[1]   the credential version it must still have ('' = any)
-- ARGV[2]   '1' bumps the credential version
-- ARGV[3]   n, then n hash fields to delete, then field/value pairs to set
--
-- Returns 1 if it updated, else 0.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] ~= '' and (redis.call('HGET', KEYS[1], 'credentialVersion') or '0') ~= ARGV[1] then return 0 end
if ARGV[2] == '1' then redis.call('HINCRBY', KEYS[1], 'credentialVersion', 1) end
local n = tonumber(ARGV[3])
for i = 4, n + 3 do redis.call('HDEL', KEYS[1], ARGV[i]) end
local fields = {}
for i = n + 4, #ARGV do fields[#fields + 1] = ARGV[i] end
if #fields > 0 then redis.call('HSET', KEYS[1], unpack(fields)) end
return 1
