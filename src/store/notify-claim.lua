-- Takes the lease of one notification delivery (store/notify-outbox.ts), unless it was made or someone else
-- holds it: one subscriber is told of one change set once, however many workers and retries try.
--
-- KEYS[1]  the delivery's STRING: `lease:<owner>` (PX: the lease), or `sent`, `dropped`, `empty` once done
-- ARGV[1]  the owner (a job's lock token)
-- ARGV[2]  the lease (ms)
--
-- Returns `claimed` (the lease is the caller's, taken or renewed), `busy` (another owner's lease is live) or
-- `sent` (done already, however it ended).
local value = redis.call('GET', KEYS[1])
local mine = 'lease:' .. ARGV[1]
if value == false or value == mine then
  redis.call('SET', KEYS[1], mine, 'PX', tonumber(ARGV[2]))
  return 'claimed'
end
if string.sub(value, 1, 6) == 'lease:' then return 'busy' end
return 'sent'
