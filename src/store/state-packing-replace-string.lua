-- Replaces a string value with its packed form only while it is still the value read, keeping its time to
-- live (store/state-packing.ts): a publication racing the rewrite wins.
--
-- KEYS[1]  the string
-- ARGV[1]  the value read
-- ARGV[2]  its packed form
--
-- Returns 1 when it replaced the value, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL') return 1 end return 0
