-- Moves a personal subscription to the students of another group (or of none): its own record and the packed
-- member lists of both groups change together (store/source-relations.ts; packed-ids.prelude.lua in front).
--
-- KEYS[1]  the bucket of `member-of` holding the subscription (HASH: subscription id -> group id)
-- KEYS[2]  `group-members` (HASH: group id -> subscription ids of its students, 22 characters each, concatenated)
-- ARGV[1]  the subscription id (22 characters)
-- ARGV[2]  its group id, or '' for none
--
-- Returns 1 when something changed, else 0.
local id, group = ARGV[1], ARGV[2]
local old = redis.call('HGET', KEYS[1], id)
if (old or '') == group then return 0 end

if old then packed_remove(KEYS[2], old, id) end
if group == '' then
  redis.call('HDEL', KEYS[1], id)
else
  packed_add(KEYS[2], group, id)
  redis.call('HSET', KEYS[1], id, group)
end
return 1
