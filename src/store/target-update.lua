-- A guarded update of a push target (store/push-target-store.ts): its hash, with the due ZSET and the index
-- in the same step. Does nothing once the target is gone, so no transition revives a removed target.
--
-- KEYS[1]  the target hash
-- KEYS[2]  the due ZSET
-- KEYS[3]  the index hash
-- ARGV[1]  the target id
-- ARGV[2]  the credential version (hash field tokenVersion) it must still have ('' = any)
-- ARGV[3]  '1' bumps the credential version
-- ARGV[4]  the due change: '' keeps it, '-' removes the target, else its score
-- ARGV[5]  '1' adds to the due ZSET only if absent (ZADD NX)
-- ARGV[6]  '1' deletes the index
-- ARGV[7]  the time ('' = none), stored as `statusAt` when the update changes the status
-- ARGV[8]  the calendar id it must still point at ('' = any)
-- ARGV[9]  n, then n hash fields to delete, then field/value pairs to set
--
-- Returns 1 if it updated, 0 when the target is gone, the version moved on or the calendar changed.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'tokenVersion') ~= ARGV[2] then return 0 end
if ARGV[8] ~= '' and redis.call('HGET', KEYS[1], 'calendarId') ~= ARGV[8] then return 0 end
if ARGV[3] == '1' then redis.call('HINCRBY', KEYS[1], 'tokenVersion', 1) end
if ARGV[4] == '-' then redis.call('ZREM', KEYS[2], ARGV[1])
elseif ARGV[4] ~= '' and ARGV[5] == '1' then redis.call('ZADD', KEYS[2], 'NX', ARGV[4], ARGV[1])
elseif ARGV[4] ~= '' then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1]) end
if ARGV[6] == '1' then redis.call('DEL', KEYS[3]) end
local before = redis.call('HGET', KEYS[1], 'status')
local n = tonumber(ARGV[9])
for i = 10, n + 9 do redis.call('HDEL', KEYS[1], ARGV[i]) end
local fields = {}
for i = n + 10, #ARGV do fields[#fields + 1] = ARGV[i] end
if #fields > 0 then redis.call('HSET', KEYS[1], unpack(fields)) end
if ARGV[7] ~= '' and redis.call('HGET', KEYS[1], 'status') ~= before then redis.call('HSET', KEYS[1], 'statusAt', ARGV[7]) end
return 1
