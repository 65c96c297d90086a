-- Takes the sources the freshness pacer queues now, and marks them taken (store/freshness-store.ts): first
-- those due by their deadline (`lead` ms before it, oldest deadline first), then those of lowest next refresh.
-- Each taken source gets a provisional next refresh and deadline `provisional` ms from now, so that the next
-- steps do not take it again; the pacer settles it further once its refresh is queued, and a successful refresh
-- plans it anew. One taken and never queued (the process died) is due again soon after the provisional mark.
--
-- KEYS[1]  ZSET next refresh by source
-- KEYS[2]  ZSET deadline by source
-- KEYS[3]  HASH packed state by source
-- ARGV[1]  now (ms)
-- ARGV[2]  how many to take in all (the rotation's credit)
-- ARGV[3]  how many overdue ones may be taken at most, even beyond ARGV[2] (the wait guarantee goes first)
-- ARGV[4]  lead: a source is due this many ms before its deadline
-- ARGV[5]  provisional: ms from now of the provisional next refresh and deadline
--
-- Returns a flat list: source, 1 when it was overdue else 0, its packed state (false when none), per source.
local now = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local overdueMax = math.max(count, tonumber(ARGV[3]))
local lead = tonumber(ARGV[4])
local provisional = tonumber(ARGV[5])
local taken, seen = {}, {}
if overdueMax > 0 then
  for _, source in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now + lead, 'LIMIT', 0, overdueMax)) do
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
  redis.call('ZADD', KEYS[1], 'XX', now + provisional, item[1])
  redis.call('ZADD', KEYS[2], 'XX', now + provisional, item[1])
  reply[#reply + 1] = item[1]
  reply[#reply + 1] = item[2]
  reply[#reply + 1] = redis.call('HGET', KEYS[3], item[1])
end
return reply
