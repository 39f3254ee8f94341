-- wrk script for `make bench`, section 7: a flood of refused logins. Every request is
-- POST /v1/login with the next body of BODIES (one JSON body a line, cycled), until the
-- threads have had TOTAL answers between them (TOTAL / THREADS each); each thread then
-- creates DIR/done-n so the harness ends wrk at once (SIGINT). Answers are counted by
-- status. Times: CLOCK_MONOTONIC via ffi, first request of any thread to the last answer.
-- usage: wrk -t THREADS -c C -d MAXs -s flood.lua URL -- TOTAL THREADS BODIES DIR
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
  bodies = {}
  for line in io.lines(args[3]) do
    bodies[#bodies + 1] = line
  end
  dir = args[4]
  index, got, s200, s401, s429, other, t0, t1, finished = 0, 0, 0, 0, 0, 0, 0, 0, false
end

function request()
  if t0 == 0 then t0 = now_us() end
  index = index % #bodies + 1
  return wrk.format("POST", "/v1/login", {["Content-Type"] = "application/json"}, bodies[index])
end

function response(status, headers, body)
  if finished then return end
  got = got + 1
  if status == 200 then
    s200 = s200 + 1
  elseif status == 401 then
    s401 = s401 + 1
  elseif status == 429 then
    s429 = s429 + 1
  else
    other = other + 1
  end
  if got >= quota then
    finished = true
    t1 = now_us()
    local f = io.open(dir .. "/done-" .. id, "w")
    f:close()
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local sums, first, last = {got = 0, s200 = 0, s401 = 0, s429 = 0, other = 0}, math.huge, 0
  for _, t in ipairs(threads) do
    for name, _ in pairs(sums) do
      sums[name] = sums[name] + t:get(name)
    end
    if t:get("t0") > 0 then first = math.min(first, t:get("t0")) end
    last = math.max(last, t:get("t1"))
  end
  io.write(string.format(
    'WRKJSON {"ok":%d,"bad":%d,"answers":%d,"s401":%d,"s429":%d,"other":%d,"requests":%d,"elapsed_us":%d,' ..
    '"duration_us":%d,"p50_us":%d,"p99_us":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d}\n',
    sums.s200, sums.got - sums.s200, sums.got, sums.s401, sums.s429, sums.other, summary.requests, last - first,
    summary.duration, latency:percentile(50), latency:percentile(99),
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout))
end
