-- Removes subscriptions of a mailbox (store/mailboxes.ts); once it follows nothing, the mailbox is deleted with
-- its sealed address and the address's index: an address nobody is told at is not kept.
--
-- KEYS[1]       the mailbox's HASH
-- KEYS[2]       the mailbox's subscriptions HASH
-- KEYS[3]       the address's mailbox index (deleted only while it names this mailbox)
-- KEYS[4..3+n]  the SET of mailboxes of each source
-- ARGV[1]       the mailbox id
-- ARGV[2..1+n]  the sources, in the order of their SETs
--
-- Returns {subscriptions removed, subscriptions left}.
local removed = 0
for i = 2, #ARGV do
  removed = removed + redis.call('HDEL', KEYS[2], ARGV[i])
  redis.call('SREM', KEYS[2 + i], ARGV[1])
end
local left = redis.call('HLEN', KEYS[2])
if left == 0 then
  redis.call('DEL', KEYS[1], KEYS[2])
  if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
end
return {removed, left}
