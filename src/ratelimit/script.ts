/**
 * The one Lua script of a Redis decision: the exact sliding log over every rule that applies to a
 * request, on Redis's own clock (`TIME`), atomic because Redis runs a script alone. Each key is a
 * sorted set of admissions scored by their time in microseconds, with a member unique per decision.
 *
 * KEYS: one per rule, all with the subject's hash tag (one slot, so Redis Cluster runs it too).
 * ARGV: record (1 or 0), the decision's unique member, then per rule: limit, window in seconds.
 * Answer: admitted (1 or 0), then per rule: remaining, microseconds until the admission whose
 * leaving frees a slot leaves the window.
 */
export const DECISION_SCRIPT = `
if redis.replicate_commands then pcall(redis.replicate_commands) end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local record = ARGV[1] == '1'
local member = ARGV[2]
local counts = {}
local admitted = 1
for i = 1, #KEYS do
  local limit = tonumber(ARGV[1 + 2 * i])
  local window = tonumber(ARGV[2 + 2 * i]) * 1000000
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
  counts[i] = redis.call('ZCARD', KEYS[i])
  if counts[i] >= limit then admitted = 0 end
end
local out = {admitted}
for i = 1, #KEYS do
  local limit = tonumber(ARGV[1 + 2 * i])
  local window = tonumber(ARGV[2 + 2 * i]) * 1000000
  if record and admitted == 1 then
    redis.call('ZADD', KEYS[i], now, member)
    redis.call('PEXPIRE', KEYS[i], window / 1000 + 1000)
    counts[i] = counts[i] + 1
  end
  local reset = window
  if counts[i] > 0 then
    local index = math.max(0, counts[i] - limit)
    local oldest = redis.call('ZRANGE', KEYS[i], index, index, 'WITHSCORES')
    reset = tonumber(oldest[2]) + window - now
  end
  out[2 * i] = math.max(0, limit - counts[i])
  out[2 * i + 1] = reset
end
return out
`;
