-- Revokes one token of a subscription: a token issued for an answer that was never sent, or a feed URL its owner
-- revoked on the personal page (store/subscription-store.ts). Only while the token's index still leads to that
-- subscription. Its read record goes too; when it was the page's own URL, the page's sealed copy of it; and when
-- it was the token from before token sets (the hash's `tokenHash` field), that field, or the URL would stay
-- listed though it no longer works. Then announced.
--
-- KEYS[1]  the token set
-- KEYS[2]  the token's index
-- KEYS[3]  the subscription hash
-- ARGV[1]  the token hash
-- ARGV[2]  the subscription id
-- ARGV[3]  the feed-updates channel
-- ARGV[4]  the message announcing the revocation
--
-- Returns 2 when it revoked the page's own URL, 1 when it revoked another token, else 0.
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[3], 'read:' .. ARGV[1])
if redis.call('HGET', KEYS[3], 'tokenHash') == ARGV[1] then redis.call('HDEL', KEYS[3], 'tokenHash') end
local page = 0
if redis.call('HGET', KEYS[3], 'pageTokenHash') == ARGV[1] then
  redis.call('HDEL', KEYS[3], 'pageToken', 'pageTokenHash')
  page = 1
end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1 + page
