-- Prelude: the packed id lists of store/source-relations.ts, where each id is 22 characters and a list is the ids
-- concatenated (a group's students, an elective's students). Put in front of the scripts that name it.
--
-- Returns nothing itself: it defines `packed_find`, `packed_add` and `packed_remove`.

-- The position of `id` in a packed list, on a 22-character boundary (nil when absent).
local function packed_find(list, id)
  local from = 1
  while true do
    local at = string.find(list, id, from, true)
    if not at then return nil end
    if (at - 1) % 22 == 0 then return at end
    from = at + 1
  end
end

-- Adds `id` to the list in field `field` of the HASH `key`, unless it is there.
local function packed_add(key, field, id)
  local list = redis.call('HGET', key, field) or ''
  if not packed_find(list, id) then redis.call('HSET', key, field, list .. id) end
end

-- Takes `id` out of the list in field `field` of the HASH `key`; an emptied list's field goes.
local function packed_remove(key, field, id)
  local list = redis.call('HGET', key, field) or ''
  local at = packed_find(list, id)
  if not at then return end
  local rest = string.sub(list, 1, at - 1) .. string.sub(list, at + 22)
  if rest == '' then redis.call('HDEL', key, field) else redis.call('HSET', key, field, rest) end
end
