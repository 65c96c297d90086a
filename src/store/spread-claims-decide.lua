-- Decides which changed classes a refresh spreads, and records what it spreads (store/spread-claims.ts): compare
-- and set, class by class. A class's key holds the version last spread (its digest, hex, or `gone`), then the
-- ids of the groups whose students that spread reached, space-separated.
--
-- KEYS[i]  STRING the last spread of the i-th class
-- ARGV[1]  how long a recorded spread is kept (ms)
-- ARGV[2]  the finder's group id; '' when the finder is not a group
-- then per class, 4 values: what it became (digest or `gone`); what the finder showed before ('' when the class
-- is new to it); '1' to record the version as spread, '0' to compare only; the ids of the groups whose students
-- the finder's spread reaches (space-separated, may be '')
--
-- Returns per class: 1 to spread, 2 to spread to the finder group's own students only (the version was spread,
-- but without them), 0 for nothing to spread.
local ttl = ARGV[1]
local finder = ARGV[2]
local function has(list, id)
  return string.find(' ' .. list .. ' ', ' ' .. id .. ' ', 1, true) ~= nil
end
local verdicts = {}
for i, key in ipairs(KEYS) do
  local base = 2 + 4 * (i - 1)
  local mine, lost, record, covers = ARGV[base + 1], ARGV[base + 2], ARGV[base + 3], ARGV[base + 4]
  local stored = redis.call('GET', key)
  local version, covered = nil, ''
  if stored then
    local space = string.find(stored, ' ', 1, true)
    if space then
      version, covered = string.sub(stored, 1, space - 1), string.sub(stored, space + 1)
    else
      version = stored
    end
  end
  -- Spread already, or the finder lost a version the class has moved on from since, and that move was spread:
  -- nothing to tell, but a group that spread could not name (an unresolved name) still tells its own students.
  if version == mine or (mine == 'gone' and version and lost ~= '' and version ~= lost) then
    if finder ~= '' and not has(covered, finder) then
      redis.call('SET', key, stored .. ' ' .. finder, 'PX', ttl)
      verdicts[i] = 2
    else
      verdicts[i] = 0
    end
  else
    if record == '1' then
      local value = mine
      if covers ~= '' then value = value .. ' ' .. covers end
      redis.call('SET', key, value, 'PX', ttl)
    end
    verdicts[i] = 1
  end
end
return verdicts
