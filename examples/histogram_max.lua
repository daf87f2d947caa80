-- histogram_max.lua — one pass over f32 samples that builds a 64-bin histogram and finds
-- the largest sample. Each workgroup counts into its own bins in shared memory (shared
-- atomics, cheap) and keeps its own maximum, then adds its bins to the global ones and
-- folds its maximum in with one global atomic max each. Checked against plain Lua.
package.path = (arg and arg[0] and arg[0]:match("^(.*)/") or ".") .. "/support/?.lua;"
  .. package.path
local vyre = require("vyre.cuda")
local common = require("common")

local NBINS = 64
local hist_max = vyre.program("hist_max", {workgroup = 256,
    vyre.buffer("x", "f32", "read"),
    vyre.buffer("bins", "u32", "read_write", NBINS),
    vyre.buffer("maxv", "f32", "read_write", 1),
    vyre.param("lo", "f32"), vyre.param("scale", "f32"),
    vyre.shared("local_bins", "u32", NBINS), vyre.shared("local_max", "f32", 1)},
  function(k)
    local l, i = k:let("l", k.lid.x), k:let("i", k.gid.x)
    k:when(l:lt(NBINS), function() k.local_bins[l] = 0 end)
    k:when(l:eq(0), function() k.local_max[0] = -math.huge end)
    k:barrier()
    k:when(i:lt(k.x:len()), function()
      local v = k:let("v", k.x[i])
      -- (v - lo) * scale truncated to an integer, clamped into the last bin.
      local b = k:let("b", vyre.cast("u32", (v - k.lo) * k.scale):min(NBINS - 1))
      k:atomic("add", k.local_bins, b, 1)
      k:atomic("max", k.local_max, 0, v)
    end)
    k:barrier()
    k:when(l:lt(NBINS), function() k:atomic("add", k.bins, l, k.local_bins[l]) end)
    k:when(l:eq(0), function() k:atomic("max", k.maxv, 0, k.local_max[0]) end)
  end)

local be = common.backend()
local n, lo, hi = 100000, -50.0, 150.0
local scale = NBINS / (hi - lo)               -- 0.32: not exact in f32, rounded as the GPU
local x = vyre.array("f32", n):random(2026, 0, 1)
for i = 1, n do x[i] = lo + (hi - lo) * x[i] * x[i] end -- skewed toward lo
local maxv = vyre.array("f32", {-math.huge})
local out = be:run(hist_max, {x = x, bins = vyre.array("u32", NBINS), maxv = maxv, lo = lo,
  scale = scale}, {n = n})

local f32 = common.f32
local want, wmax = {}, -math.huge
for b = 1, NBINS do want[b] = 0 end
for i = 1, n do
  local v = x[i]
  -- the cast truncates toward zero and saturates negatives at 0 (none here: v >= lo)
  local b = math.min(math.floor(f32(f32(v - lo) * f32(scale))), NBINS - 1) + 1
  want[b] = want[b] + 1
  wmax = math.max(wmax, v)
end
local total = 0
for b = 1, NBINS do
  common.check(out.bins[b] == want[b], "bin %d = %d, want %d", b, out.bins[b], want[b])
  total = total + out.bins[b]
end
common.check(total == n, "total %d, want %d", total, n)
common.check(out.maxv[1] == wmax, "max %.9g, want %.9g", out.maxv[1], wmax)
print(("histogram_max: %d samples on %s, bin[1] = %d, bin[%d] = %d, max = %.4f — matches")
  :format(n, be.name, out.bins[1], NBINS, out.bins[NBINS], out.maxv[1]))
