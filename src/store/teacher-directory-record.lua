-- Writes teachers the caller found new or changed; a change raises the directory's version
-- (store/teacher-directory.ts).
--
-- KEYS[1]   the directory hash (id -> JSON)
-- KEYS[2]   the version counter
-- ARGV[1]   the most teachers it keeps: a new id beyond it is left out (known ones are still updated)
-- ARGV[2..] pairs of id and JSON
--
-- Returns how many teachers it wrote.
local max = tonumber(ARGV[1])
local size = redis.call('HLEN', KEYS[1])
local written = 0
for i = 2, #ARGV, 2 do
  local id, record = ARGV[i], ARGV[i + 1]
  if redis.call('HGET', KEYS[1], id) ~= record then
    if redis.call('HEXISTS', KEYS[1], id) == 1 then
      redis.call('HSET', KEYS[1], id, record)
      written = written + 1
    elseif size < max then
      redis.call('HSET', KEYS[1], id, record)
      size, written = size + 1, written + 1
    end
  end
end
if written > 0 then redis.call('INCR', KEYS[2]) end
return written
