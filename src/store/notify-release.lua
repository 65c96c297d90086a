-- Gives a notification delivery's lease back (store/notify-outbox.ts) when its owner still holds it, so that
-- a retry need not wait for it to expire; a delivery done, or leased by another, is left as it is.
--
-- KEYS[1]  the delivery's STRING
-- ARGV[1]  the owner
--
-- Returns 1 when the lease was released, 0 otherwise.
if redis.call('GET', KEYS[1]) == 'lease:' .. ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
