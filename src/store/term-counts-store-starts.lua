-- Stores the term starts in force unless term starts resolved from newer counts are stored already
-- (store/term-counts.ts).
--
-- KEYS[1]  the stored term starts (JSON with the version of the counts they come from)
-- ARGV[1]  the version of the counts these come from
-- ARGV[2]  their JSON
--
-- Returns {1 when it stored them else 0, the previous JSON or ''}.
local current = redis.call('GET', KEYS[1])
if current and cjson.decode(current).version > tonumber(ARGV[1]) then return {0, current} end
redis.call('SET', KEYS[1], ARGV[2])
return {1, current or ''}
