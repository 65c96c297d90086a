-- Marks a source's feed stale (store/registry.ts). Only a registered source is marked; `staleSince` is kept
-- from the first failure, and a status of ok, pending or awaiting-confirmation becomes stale.
--
-- KEYS[1]  the source hash
-- KEYS[2]  the SET of stale sources
-- ARGV[1]  since when (ms)
-- ARGV[2]  the source
--
-- Returns the source's `staleSince`, or nil when it is not registered.
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
redis.call('HSETNX', KEYS[1], 'staleSince', ARGV[1])
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'ok' or status == 'pending' or status == 'awaiting-confirmation' then redis.call('HSET', KEYS[1], 'status', 'stale') end
redis.call('SADD', KEYS[2], ARGV[2])
return redis.call('HGET', KEYS[1], 'staleSince')
