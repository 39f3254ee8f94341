-- wrk script for `make bench`: GET PATH on keep-alive connections until the threads have
-- had TOTAL answers between them (TOTAL / THREADS each); each thread then creates
-- DIR/done-n so the harness ends wrk at once (SIGINT). Times: CLOCK_MONOTONIC via ffi.
-- usage: wrk -t THREADS -c C -d MAXs -s count.lua URL -- TOTAL THREADS PATH DIR
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
  quota = math.ceil(tonumber(args[1]) / tonumber(args[2]))
  path, dir = args[3], args[4]
  got, ok, t0, t1, finished = 0, 0, 0, 0, false
end

function request()
  if t0 == 0 then t0 = now_us() end
  return wrk.format("GET", path)
end

function response(status, headers, body)
  if finished then return end
  got = got + 1
  if status == 200 then ok = ok + 1 end
  if got >= quota then
    finished = true
    t1 = now_us()
    local f = io.open(dir .. "/done-" .. id, "w")
    f:close()
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local ok_total, got_total, first, last = 0, 0, math.huge, 0
  for _, t in ipairs(threads) do
    ok_total = ok_total + t:get("ok")
    got_total = got_total + t:get("got")
    if t:get("t0") > 0 then first = math.min(first, t:get("t0")) end
    last = math.max(last, t:get("t1"))
  end
  io.write(string.format('WRKJSON {"ok":%d,"answers":%d,"requests":%d,"elapsed_us":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d}\n',
    ok_total, got_total, summary.requests, last - first, summary.duration, latency:percentile(50), latency:percentile(99)))
end
