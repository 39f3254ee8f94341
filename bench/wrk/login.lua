-- wrk script for `make bench`: every request is POST /v1/login with a token of its own.
-- usage: wrk -t T -c C -d MAXs -s login.lua URL -- DIR
-- Thread n reads DIR/tokens-n.txt (one pre-signed JWT a line, made by bench/common.py), sends
-- each token once, and stops when all were sent; it then creates DIR/done-n, so that the
-- harness can end wrk at once (SIGINT) instead of waiting for -d. Times come from
-- CLOCK_MONOTONIC (LuaJIT ffi): first request of any thread to the last answer counted.
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } fa_timespec;
int clock_gettime(int clock, fa_timespec *ts);
]]
local function now_us()
  local ts = ffi.new("fa_timespec")
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) * 1000000 + tonumber(ts.tv_nsec) / 1000
end

local threads, counter = {}, 1

function setup(thread)
  thread:set("id", counter)
  table.insert(threads, thread)
  counter = counter + 1
end

function init(args)
  dir = args[1]
  bodies = {}
  for line in io.lines(dir .. "/tokens-" .. id .. ".txt") do
    bodies[#bodies + 1] = '{"jwt":"' .. line .. '"}'
  end
  index, ok, bad, t0, t1, finished = 0, 0, 0, 0, 0, false
end

function request()
  if t0 == 0 then t0 = now_us() end
  index = index + 1
  if index > #bodies then
    -- every token was sent: a cheap request until the thread stops (never a token twice)
    return wrk.format("GET", "/healthz")
  end
  return wrk.format("POST", "/v1/login", {["Content-Type"] = "application/json"}, bodies[index])
end

function response(status, headers, body)
  if finished then return end
  if status ~= 200 then
    bad = bad + 1
  elseif string.find(body, '"jti"', 1, true) then
    ok = ok + 1
  end
  -- all tokens sent: stop; the few answers still in flight are not counted
  if index >= #bodies then
    finished = true
    t1 = now_us()
    local f = io.open(dir .. "/done-" .. id, "w")
    f:close()
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local ok_total, bad_total, first, last = 0, 0, math.huge, 0
  for _, t in ipairs(threads) do
    ok_total = ok_total + t:get("ok")
    bad_total = bad_total + t:get("bad")
    if t:get("t0") > 0 then first = math.min(first, t:get("t0")) end
    last = math.max(last, t:get("t1"))
  end
  io.write(string.format(
    'WRKJSON {"ok":%d,"bad":%d,"requests":%d,"elapsed_us":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d}\n',
    ok_total, bad_total, summary.requests, last - first, summary.duration, latency:percentile(50), latency:percentile(99),
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout))
end
