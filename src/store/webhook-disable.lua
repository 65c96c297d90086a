-- Disables a webhook, while it exists, in one step (store/webhook-store.ts): a delete racing the disable
-- must not bring back half a hook.
--
-- KEYS[1]  the webhook hash
-- KEYS[2]  its source's active webhooks SET
-- ARGV[1]  the webhook id
-- ARGV[2]  the reason
-- ARGV[3]  when (epoch ms)
--
-- Returns 1 if the hook existed, else 0.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'state', 'disabled', 'reason', ARGV[2], 'disabledAt', ARGV[3])
redis.call('SREM', KEYS[2], ARGV[1])
return 1
