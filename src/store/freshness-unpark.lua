-- Unparks sources whose explanation is gone (store/freshness-store.ts): each one still parked by what it names
-- loses its parked-by (the last field of its packed state), leaves the parked set, and gets its next refresh
-- and its deadline moved earlier when they are later than given (ZADD LT: never later). A source not planned,
-- or parked by something else by now (a refresh re-learnt it), is left alone.
--
-- KEYS[1]  ZSET next refresh by source
-- KEYS[2]  ZSET deadline by source
-- KEYS[3]  HASH packed state by source
-- KEYS[4]  SET parked sources
-- ARGV[1]  the latest deadline (ms)
-- ARGV[2…] triples: source, what parks it, its latest next refresh (ms)
--
-- Returns how many were unparked.
local deadline = ARGV[1]
local unparked = 0
for index = 2, #ARGV - 2, 3 do
  local source, parkedBy, nextAt = ARGV[index], ARGV[index + 1], ARGV[index + 2]
  local packed = redis.call('HGET', KEYS[3], source)
  if packed then
    local kept, by = string.match(packed, '^(.*|)([^|]*)$')
    if kept and by == parkedBy then
      redis.call('HSET', KEYS[3], source, kept)
      redis.call('SREM', KEYS[4], source)
      redis.call('ZADD', KEYS[1], 'XX', 'LT', nextAt, source)
      redis.call('ZADD', KEYS[2], 'XX', 'LT', deadline, source)
      unparked = unparked + 1
    end
  end
end
return unparked
