-- Holds one change set for one chat and source until a collapsing send tells them together
-- (store/notify-outbox.ts): unless this delivery was made already (a fan-out run again after the held sets were
-- told), and, in `if-held` mode, only when something is held already (a change that may go now joins the ones
-- waiting, so that the chat hears the net change, in order).
--
-- KEYS[1]  the chat's and source's HASH of held sets: stamp → packed change set
-- KEYS[2]  the delivery's STRING of this (chat, change set): present once it was told, dropped or left empty
-- ARGV[1]  the change set's stamp
-- ARGV[2]  the packed change set (as the chat's options filter it)
-- ARGV[3]  the HASH's lifetime (seconds), renewed
-- ARGV[4]  `always` or `if-held`
--
-- Returns `held`, `done` (the delivery was made: nothing to do) or `free` (`if-held` with nothing held: send it
-- on its own).
if redis.call('EXISTS', KEYS[2]) == 1 then return 'done' end
if ARGV[4] == 'if-held' and redis.call('EXISTS', KEYS[1]) == 0 then return 'free' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return 'held'
