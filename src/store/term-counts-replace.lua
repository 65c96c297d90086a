-- Replaces a source's entries in the start-date counts (store/term-counts.ts). An entry counts once however
-- many sources hold it: a reference count per `id|date` says how many do, and the per-date totals move only
-- when it goes 0 <-> 1.
--
-- KEYS[1]  the totals HASH (date -> distinct entries starting then)
-- KEYS[2]  the per-source entries HASH (source -> JSON)
-- KEYS[3]  the reference counts HASH (`id|date` -> sources)
-- KEYS[4]  the SET of sources with odd- or even-week entries
-- KEYS[5]  the version counter
-- ARGV[1]  the source
-- ARGV[2]  its entries as JSON `{ id: date }` (`{}` forgets it)
-- ARGV[3]  '1' when it has odd- or even-week entries
--
-- Returns 1 when a total changed (the version went up), else 0.
local stored = redis.call('HGET', KEYS[2], ARGV[1])
local before = stored and cjson.decode(stored) or {}
local after = cjson.decode(ARGV[2])
local changed = false
for id, date in pairs(before) do
  if after[id] ~= date then
    local ref = id .. '|' .. date
    if redis.call('HINCRBY', KEYS[3], ref, -1) <= 0 then
      redis.call('HDEL', KEYS[3], ref)
      if redis.call('HINCRBY', KEYS[1], date, -1) <= 0 then redis.call('HDEL', KEYS[1], date) end
      changed = true
    end
  end
end
local any = false
for id, date in pairs(after) do
  any = true
  if before[id] ~= date and redis.call('HINCRBY', KEYS[3], id .. '|' .. date, 1) == 1 then
    redis.call('HINCRBY', KEYS[1], date, 1)
    changed = true
  end
end
if any then redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) else redis.call('HDEL', KEYS[2], ARGV[1]) end
if ARGV[3] == '1' then redis.call('SADD', KEYS[4], ARGV[1]) else redis.call('SREM', KEYS[4], ARGV[1]) end
if changed then redis.call('INCR', KEYS[5]) end
return changed and 1 or 0
