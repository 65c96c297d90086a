-- Renews a live browser session of a subscription when it is used (store/subscription-sessions.ts): once `renew`
-- ms of its life have passed since it was opened or last renewed, it lasts `lifetime` ms from now again. At most
-- one write a `renew` period per session, however often the page is opened. Only while its index leads to the
-- subscription: a closed session is not brought back.
--
-- KEYS[1]  the subscription's session set
-- KEYS[2]  the session's index
-- ARGV[1]  the subscription id
-- ARGV[2]  the session's hash
-- ARGV[3]  now (ms)
-- ARGV[4]  the session's lifetime (ms)
-- ARGV[5]  how long after its last renewal a session is renewed (ms)
--
-- Returns 1 when it renewed, else 0.
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
local expires = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]))
if expires == nil then return 0 end
local now = tonumber(ARGV[3])
local lifetime = tonumber(ARGV[4])
if expires - lifetime + tonumber(ARGV[5]) > now then return 0 end
redis.call('ZADD', KEYS[1], now + lifetime, ARGV[2])
redis.call('PEXPIRE', KEYS[1], lifetime)
redis.call('PEXPIRE', KEYS[2], lifetime)
return 1
