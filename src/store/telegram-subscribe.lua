-- Subscribes a chat to a source unless that would make it follow more than a bound (store/telegram-chats.ts):
-- a source it follows already only gets its new options.
--
-- KEYS[1]  the chat's HASH (source -> options as JSON)
-- KEYS[2]  the source's SET of chats
-- ARGV[1]  the source
-- ARGV[2]  its options as JSON
-- ARGV[3]  the chat id
-- ARGV[4]  the most sources a chat may follow
--
-- Returns 1 when it added the source, 0 when it only replaced the options, -1 when the chat follows too many.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  redis.call('SADD', KEYS[2], ARGV[3])
  return 0
end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
return 1
