-- bench/fill.lua — buf:fill, buf:iota and buf:random on a CUDA buffer (device kernels of
-- vyre.lib.basic, src/lvyre/lgen.c) against the way they ran before: the same elements
-- made by the vyre.Array method on the host and uploaded (buf:upload). Also CuPy's
-- cp.full / cp.arange in the same call when python3 has CuPy (the bandwidth roof).
-- Usage: lua5.4 bench/fill.lua [MiB]   (per buffer; default 512)
-- Prints "name value unit" lines; GB/s counts the bytes written.
local vyre = require("vyre")
local now_ns = require("vyre.core").now_ns

local MIB = tonumber(arg and arg[1] or "") or 512
local REPS = 5

local common = require("bench.common")
local be = common.cuda()
local out = common.out

-- Best of REPS wall times of fn() followed by a wait for the device, in ns.
local function best(fn)
  local b = math.huge
  for _ = 1, REPS do
    be:synchronize()
    local t = now_ns()
    fn()
    be:synchronize()
    b = math.min(b, now_ns() - t)
  end
  return b
end

local n = MIB * (1 << 20) // 4
local bytes = n * 4
local cases = {
  { "fill_u32", "u32", "fill", { 7 } },
  { "iota_f32", "f32", "iota", { 0.5, 0.25 } },
  { "random_f32", "f32", "random", { 42, -1, 1 } },
  { "random_u32", "u32", "random", { 42 } },
}
for _, c in ipairs(cases) do
  local name, t, method, args = c[1], c[2], c[3], c[4]
  local buf = be:buffer(t, n)
  buf[method](buf, table.unpack(args)) -- compile once
  local dev = best(function() buf[method](buf, table.unpack(args)) end)
  local host = best(function()
    local a = vyre.array(t, n)
    a[method](a, table.unpack(args))
    buf:upload(a)
  end)
  out("dev_" .. name .. "_gbps", bytes / dev, "GB/s")
  out("host_" .. name .. "_gbps", bytes / host, "GB/s")
  out("speedup_" .. name, host / dev, "x")
  buf:free()
  collectgarbage()
end

local py = io.popen(([[python3 - <<'PY' 2>&1
import time
try:
    import cupy as cp
except Exception as e:
    print("cupy_unavailable 0 " + type(e).__name__); raise SystemExit
n = %d
def best(f):
    b = 1e30
    for _ in range(%d):
        cp.cuda.Device().synchronize(); t = time.perf_counter_ns(); f()
        cp.cuda.Device().synchronize(); b = min(b, time.perf_counter_ns() - t)
    return b
x = cp.empty(n, dtype=cp.uint32)
f = lambda: x.fill(7)
f(); print("cupy_fill_u32_gbps %%.3f GB/s" %% (4 * n / best(f)))
g = lambda: cp.arange(0.5, 0.5 + 0.25 * n, 0.25, dtype=cp.float32)
g(); print("cupy_arange_f32_gbps %%.3f GB/s" %% (4 * n / best(g)))
PY]]):format(n, REPS))
io.write(py:read("a"))
py:close()
