-- Confirms a pending e-mail sign-up (store/mailboxes.ts): the address's mailbox (made now when it has none)
-- subscribes to the source with the sign-up's options, and the sign-up is used up. A source the mailbox follows
-- already only gets the new options and digest choice; its unsubscribe nonce is kept, so that the links in mails
-- sent before keep working.
--
-- KEYS[1]  the pending sign-up's HASH
-- KEYS[2]  the address's mailbox index (STRING: mailbox id)
-- KEYS[3]  the mailbox's HASH
-- KEYS[4]  the mailbox's subscriptions HASH (source -> JSON)
-- KEYS[5]  the source's SET of mailboxes
-- ARGV[1]  the mailbox id: the one the index named when read, or a new one
-- ARGV[2]  the address sealed for that id (written only when the mailbox is new)
-- ARGV[3]  the address's keyed digest
-- ARGV[4]  now (epoch ms)
-- ARGV[5]  the source
-- ARGV[6]  the subscription as JSON, without its nonce: {"o": options, "d": digest}
-- ARGV[7]  a fresh nonce (used when the mailbox did not follow the source)
-- ARGV[8]  the most sources a mailbox may follow
--
-- Returns 'expired' (no such sign-up: used, or 48 h old), 'moved' (the index names another mailbox than ARGV[1]:
-- read it again), 'full', 'added' or 'updated'.
if redis.call('EXISTS', KEYS[1]) == 0 then return 'expired' end
local current = redis.call('GET', KEYS[2])
if current and current ~= ARGV[1] then return 'moved' end
local existing = redis.call('HGET', KEYS[4], ARGV[5])
if not existing and redis.call('HLEN', KEYS[4]) >= tonumber(ARGV[8]) then return 'full' end
if not current then
  redis.call('SET', KEYS[2], ARGV[1])
  redis.call('HSET', KEYS[3], 'address', ARGV[2], 'hash', ARGV[3], 'created', ARGV[4])
end
local record = cjson.decode(ARGV[6])
record['n'] = ARGV[7]
if existing then
  local ok, before = pcall(cjson.decode, existing)
  if ok and type(before) == 'table' and type(before['n']) == 'string' then record['n'] = before['n'] end
end
redis.call('HSET', KEYS[4], ARGV[5], cjson.encode(record))
redis.call('SADD', KEYS[5], ARGV[1])
redis.call('DEL', KEYS[1])
if existing then return 'updated' end
return 'added'
