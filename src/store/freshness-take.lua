-- Takes the sources the freshness pacer queues now, and marks them taken (store/freshness-store.ts): first
-- those past their deadline (oldest deadline first), then those of lowest next refresh. Each taken source gets
-- a provisional next refresh and deadline `retake` ms from now, so that the next steps do not take it again; a
-- successful refresh plans it anew, and a failing one is taken again only once that time has passed.
--
-- KEYS[1]  ZSET next refresh by source
-- KEYS[2]  ZSET deadline by source
-- KEYS[3]  HASH packed state by source
-- ARGV[1]  now (ms)
-- ARGV[2]  how many to take in all (the rotation's credit)
-- ARGV[3]  how many overdue ones may be taken at most, even beyond ARGV[2] (the wait guarantee goes first)
-- ARGV[4]  retake: ms from now of the provisional next refresh and deadline
--
-- Returns a flat list: source, 1 when it was overdue else 0, its packed state (false when none), per source.
local now = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local overdueMax = math.max(count, tonumber(ARGV[3]))
local retake = tonumber(ARGV[4])
local taken, seen = {}, {}
if overdueMax > 0 then
  for _, source in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, overdueMax)) do
    seen[source] = true
    taken[#taken + 1] = { source, 1 }
  end
end
local rest = count - #taken
if rest > 0 then
  for _, source in ipairs(redis.call('ZRANGE', KEYS[1], 0, rest + #taken - 1)) do
    if rest == 0 then break end
    if not seen[source] then
      seen[source] = true
      taken[#taken + 1] = { source, 0 }
      rest = rest - 1
    end
  end
end
local reply = {}
for _, item in ipairs(taken) do
  redis.call('ZADD', KEYS[1], 'XX', now + retake, item[1])
  redis.call('ZADD', KEYS[2], 'XX', now + retake, item[1])
  reply[#reply + 1] = item[1]
  reply[#reply + 1] = item[2]
  reply[#reply + 1] = redis.call('HGET', KEYS[3], item[1])
end
return reply
