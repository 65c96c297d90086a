-- Reads a stored `/start` payload (store/telegram-chats.ts) and renews one an older version stored for a year:
-- that version renewed such a link on every use, so a link shared long ago lives while people follow it. A
-- payload stored for the short lifetime is only read.
--
-- KEYS[1]  the payload's key
-- ARGV[1]  the short lifetime, seconds
-- ARGV[2]  the older versions' lifetime, seconds
--
-- Returns the value, or false when there is none.
local value = redis.call('GET', KEYS[1])
if value and redis.call('TTL', KEYS[1]) > tonumber(ARGV[1]) then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return value
