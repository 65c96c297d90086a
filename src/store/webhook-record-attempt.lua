-- Records one delivery attempt of a webhook, newest first, keeping the last few (store/webhook-store.ts);
-- nothing for a hook deleted meanwhile, so that no log outlives its hook.
--
-- KEYS[1]  the webhook hash
-- KEYS[2]  its attempt log LIST
-- ARGV[1]  the attempt as JSON
-- ARGV[2]  how many attempts are kept
--
-- Returns 1 if recorded, else 0.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]) - 1)
return 1
