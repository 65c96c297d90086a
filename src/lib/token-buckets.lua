-- Token buckets shared through Redis (lib/rate-limit.ts): takes tokens from several buckets at once, or from
-- none of them. A bucket is a hash (`tokens`, `at`) that expires once it would be full again.
--
-- KEYS           the buckets
-- ARGV[1]        the time in ms ('' = Redis TIME)
-- ARGV[2]        cost
-- ARGV[3]        the mode: take, check, give or charge
-- ARGV[3i + 1]   bucket i's rate (tokens per ms), then
-- ARGV[3i + 2]   its capacity, and
-- ARGV[3i + 3]   its reserve (tokens a take must leave)
--
-- take: takes `cost` tokens from every bucket, or none when one of them holds less than `cost` plus its
-- reserve (at most its capacity); check: answers the same without taking; give: puts `cost` back in every
-- bucket (up to capacity); charge: takes `cost` whatever is there, down to minus the capacity (a debt that
-- delays the next token, for a charge known only after the fact).
--
-- Returns 0, or (take and check, refused) the ms until every bucket holds that much.
local now = tonumber(ARGV[1])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local cost, mode = tonumber(ARGV[2]), ARGV[3]
local levels, rates, capacities, reserves = {}, {}, {}, {}
for i, key in ipairs(KEYS) do
  local rate, capacity = tonumber(ARGV[1 + 3 * i]), tonumber(ARGV[2 + 3 * i])
  local state = redis.call('HMGET', key, 'tokens', 'at')
  local tokens, at = tonumber(state[1]), tonumber(state[2])
  local level = capacity
  if tokens ~= nil and at ~= nil then level = math.min(capacity, tokens + math.max(0, now - at) * rate) end
  levels[i], rates[i], capacities[i], reserves[i] = level, rate, capacity, tonumber(ARGV[3 + 3 * i])
end
local wait = 0
if mode == 'take' or mode == 'check' then
  for i = 1, #KEYS do
    local need = math.min(cost + reserves[i], capacities[i])
    if levels[i] < need then wait = math.max(wait, (need - levels[i]) / rates[i]) end
  end
  if wait > 0 then return math.max(1, math.ceil(wait)) end
  if mode == 'check' then return 0 end
end
for i, key in ipairs(KEYS) do
  local level = math.min(capacities[i], levels[i] + cost)
  if mode ~= 'give' then level = math.max(-capacities[i], levels[i] - cost) end
  if level >= capacities[i] then
    redis.call('DEL', key)
  else
    redis.call('HSET', key, 'tokens', tostring(level), 'at', tostring(now))
    redis.call('PEXPIRE', key, math.ceil((capacities[i] - level) / rates[i]) + 1000)
  end
end
return 0
