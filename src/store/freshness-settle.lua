-- Settles sources the freshness pacer took and has since queued (store/freshness-store.ts): their provisional
-- next refresh and deadline move to the settled time. A source whose score is no longer the provisional mark
-- was planned meanwhile (its refresh already ran) or forgotten, and keeps what it has.
--
-- KEYS[1]  ZSET next refresh by source
-- KEYS[2]  ZSET deadline by source
-- ARGV[1]  the provisional mark (ms) the take gave them
-- ARGV[2]  the settled time (ms)
-- ARGV[3…] the sources
-- Returns 0.
local provisional = tonumber(ARGV[1])
local settled = ARGV[2]
for index = 3, #ARGV do
  local source = ARGV[index]
  for _, key in ipairs(KEYS) do
    if tonumber(redis.call('ZSCORE', key, source)) == provisional then redis.call('ZADD', key, 'XX', settled, source) end
  end
end
return 0
