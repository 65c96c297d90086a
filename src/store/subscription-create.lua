-- Creates a subscription with its first feed token unless its owner already has one
-- (store/subscription-store.ts).
--
-- KEYS[1]   the owner index
-- KEYS[2]   the subscription hash
-- KEYS[3]   its token set
-- KEYS[4]   the first token's index
-- ARGV[1]   the subscription id
-- ARGV[2]   the token hash
-- ARGV[3]   now (ms, the token's first use)
-- ARGV[4..] hash field/value pairs
--
-- Returns the id of the owner's subscription: ARGV[1] when this one was created, another one's when the owner
-- had it already.
local existing = redis.call('GET', KEYS[1])
if existing then return existing end
local fields = {}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[2], unpack(fields))
redis.call('HSET', KEYS[2], 'tokenSeq', 1)
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[2])
redis.call('SET', KEYS[4], ARGV[1])
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
