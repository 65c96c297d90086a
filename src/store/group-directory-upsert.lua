-- Adds or renames groups; raises the directory's version once if anything changed (store/group-directory.ts).
--
-- KEYS[1]  the directory hash (id -> name)
-- KEYS[2]  the version counter
-- ARGV     id/name pairs
--
-- Returns {added, updated}.
local added, updated = 0, 0
for i = 1, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  if not old then
    added = added + 1
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  elseif old ~= ARGV[i + 1] then
    updated = updated + 1
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
if added + updated > 0 then redis.call('INCR', KEYS[2]) end
return {added, updated}
