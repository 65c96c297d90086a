-- Clears a target's reconcile request once a push served it, unless a newer request replaced it meanwhile
-- (store/push-target-store.ts).
--
-- KEYS[1]  the target hash
-- ARGV[1]  the reconcile request the push served
--
-- Returns 1 when it cleared it, else 0.
if redis.call('HGET', KEYS[1], 'reconcileRequested') == ARGV[1] then redis.call('HSET', KEYS[1], 'reconcileRequested', '0') return 1 end return 0
