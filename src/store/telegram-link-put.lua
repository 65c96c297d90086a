-- Stores a page's `/start` payload for a kind the readable form cannot name (store/telegram-chats.ts), without
-- shortening one an older version stored for a year under the same id (the id is a digest of source and
-- options): such a key is renewed for a year, as that version renewed it on every page view, and keeps its
-- value; any other is (re)stored for the short lifetime.
--
-- KEYS[1]  the payload's key
-- ARGV[1]  the payload's value (JSON of source and options)
-- ARGV[2]  the short lifetime, seconds
-- ARGV[3]  the older versions' lifetime, seconds
--
-- Returns 1 when it renewed an older key, 0 when it stored the value for the short lifetime.
if redis.call('TTL', KEYS[1]) > tonumber(ARGV[2]) then
  redis.call('EXPIRE', KEYS[1], ARGV[3])
  return 1
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 0
