-- Replaces the classes a personal subscription has of its own (electives: in its timetable, not in its group's),
-- keeping the students listed under each class exact (store/source-relations.ts; packed-ids.prelude.lua in front).
--
-- KEYS[1]  the bucket of `electives-of` holding the subscription (HASH: subscription id -> entry ids, comma-joined)
-- KEYS[2]  `elective-students` (HASH: entry id -> subscription ids of its students, 22 characters each, concatenated)
-- ARGV[1]  the subscription id (22 characters)
-- ARGV[2]  its own entry ids now, sorted and comma-joined, or '' for none
--
-- Returns 1 when something changed, else 0.
local id, now = ARGV[1], ARGV[2]
local old = redis.call('HGET', KEYS[1], id) or ''
if old == now then return 0 end

local function set(joined)
  local ids = {}
  for entry in string.gmatch(joined, '[^,]+') do ids[entry] = true end
  return ids
end

local before, after = set(old), set(now)
for entry in pairs(before) do
  if not after[entry] then packed_remove(KEYS[2], entry, id) end
end
for entry in pairs(after) do
  if not before[entry] then packed_add(KEYS[2], entry, id) end
end
if now == '' then redis.call('HDEL', KEYS[1], id) else redis.call('HSET', KEYS[1], id, now) end
return 1
