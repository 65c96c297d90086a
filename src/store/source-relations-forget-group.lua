-- Forgets what refreshes taught about a group (store/source-relations.ts): its view digests, its entry digests,
-- and every name that leads to it. The names are keyed by name, so they are found by their value; one pass over
-- them here, rather than a read then deletes from the caller, cannot drop a name that a refresh of another group
-- has taken meanwhile.
--
-- KEYS[1]  `group-views` (HASH: group id -> view digests)
-- KEYS[2]  `group-entries` (HASH: group id -> entry digests)
-- KEYS[3]  `group-names` (HASH: group name -> group id)
-- ARGV[1]  the group id
--
-- Returns the number of fields deleted.
local id = ARGV[1]
local deleted = redis.call('HDEL', KEYS[1], id) + redis.call('HDEL', KEYS[2], id)
local names = redis.call('HGETALL', KEYS[3])
for index = 1, #names, 2 do
  if names[index + 1] == id then deleted = deleted + redis.call('HDEL', KEYS[3], names[index]) end
end
return deleted
