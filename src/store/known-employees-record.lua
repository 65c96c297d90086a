-- Adds employee ids to the set of known ones while it has room (store/known-employees.ts).
--
-- KEYS[1]   the SET
-- ARGV[1]   the most members it keeps
-- ARGV[2..] the ids
--
-- Returns how many ids it added.
local room = tonumber(ARGV[1]) - redis.call('SCARD', KEYS[1])
local added = 0
for i = 2, #ARGV do
  if room <= 0 then break end
  local new = redis.call('SADD', KEYS[1], ARGV[i])
  added, room = added + new, room - new
end
return added
