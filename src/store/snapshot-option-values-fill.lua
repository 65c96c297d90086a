-- Fills the option values of a source last published before its set was marked complete
-- (store/snapshot-store.ts): the subgroups and kinds read from its snapshot, and the mark. Only while the
-- snapshot is there, so that a source forgotten meanwhile (its snapshot and set deleted) gets no set again.
-- Values of a snapshot a publication replaced meanwhile are still values the timetable had: adding them is right.
--
-- KEYS[1]   the snapshot
-- KEYS[2]   SET the option values
-- ARGV[1..] the members to add, the mark among them
--
-- Returns 1 when it filled the set, else 0.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('SADD', KEYS[2], unpack(ARGV))
return 1
