-- Revokes one token of a subscription, a token issued for an answer that was never sent
-- (store/subscription-store.ts). Only while the token's index still leads to that subscription; then
-- announced.
--
-- KEYS[1]  the token set
-- KEYS[2]  the token's index
-- ARGV[1]  the token hash
-- ARGV[2]  the subscription id
-- ARGV[3]  the feed-updates channel
-- ARGV[4]  the message announcing the revocation
--
-- Returns 1 when it revoked the token, else 0.
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
