-- Replaces a push target's whole index only while the target exists (store/push-index.ts). The pairs go in
-- HSETs of 1,000 at a time: Lua's unpack takes a bounded number of values.
--
-- KEYS[1]  the target hash
-- KEYS[2]  its index
-- ARGV     event id/digest pairs (maybe none)
--
-- Returns 1 when it replaced the index, 0 when the target is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[2])
for i = 1, #ARGV, 2000 do
  redis.call('HSET', KEYS[2], unpack(ARGV, i, math.min(i + 1999, #ARGV)))
end
return 1
