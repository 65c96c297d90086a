-- Replaces the classes a personal subscription has of its own (electives: in its timetable, not in its group's),
-- keeping the students listed under each class exact (store/source-relations.ts).
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

-- The position of `id` in a packed list, on a 22-character boundary (nil when absent).
local function find(list)
  local from = 1
  while true do
    local at = string.find(list, id, from, true)
    if not at then return nil end
    if (at - 1) % 22 == 0 then return at end
    from = at + 1
  end
end

local before, after = set(old), set(now)
for entry in pairs(before) do
  if not after[entry] then
    local list = redis.call('HGET', KEYS[2], entry) or ''
    local at = find(list)
    if at then
      local rest = string.sub(list, 1, at - 1) .. string.sub(list, at + 22)
      if rest == '' then redis.call('HDEL', KEYS[2], entry) else redis.call('HSET', KEYS[2], entry, rest) end
    end
  end
end
for entry in pairs(after) do
  if not before[entry] then
    local list = redis.call('HGET', KEYS[2], entry) or ''
    if not find(list) then redis.call('HSET', KEYS[2], entry, list .. id) end
  end
end
if now == '' then redis.call('HDEL', KEYS[1], id) else redis.call('HSET', KEYS[1], id, now) end
return 1
