-- Moves a personal subscription to the students of another group (or of none): its own record and the packed
-- member lists of both groups change together (store/source-relations.ts).
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

if old then
  local list = redis.call('HGET', KEYS[2], old) or ''
  local at = find(list)
  if at then
    local rest = string.sub(list, 1, at - 1) .. string.sub(list, at + 22)
    if rest == '' then redis.call('HDEL', KEYS[2], old) else redis.call('HSET', KEYS[2], old, rest) end
  end
end
if group == '' then
  redis.call('HDEL', KEYS[1], id)
else
  local list = redis.call('HGET', KEYS[2], group) or ''
  if not find(list) then redis.call('HSET', KEYS[2], group, list .. id) end
  redis.call('HSET', KEYS[1], id, group)
end
return 1
