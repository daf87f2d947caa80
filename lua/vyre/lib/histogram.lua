-- vyre.lib.histogram — counts of values in [lo, hi) over `bins` bins (docs/LIB.md).
--
-- Each workgroup walks a grid-stride slice, counting into a shared u32 histogram with
-- shared atomics (bins <= 4096), then adds its nonzero counts into the output with
-- global atomics; more bins count with global atomics directly. Integer atomics are
-- exact, so the counts do not depend on the order. Bin of a value x in [lo, hi):
--   f32/f64: floor((x - lo) * scale), scale = bins / (hi - lo) computed in double on the
--            host and rounded to the type; clamped to bins - 1
--   i32/u32: floor((x - lo) * bins / (hi - lo)), exact (64-bit unsigned arithmetic)
--   i64/u64: floor(f64(x - lo) * scale), scale = bins / f64(hi - lo); clamped
-- Values outside [lo, hi), and NaN, are not counted.
local U = require("vyre.lib.util")
local T = require("vyre.lib.template")
local GEO = require("vyre.lib.geometry")
local basic = require("vyre.lib.basic")

local M = {}

M.SHARED_BINS = GEO.SHARED_BINS

local KERNEL = T.new("histogram", [[
(program lib_histogram_$T_$MODE (workgroup $WG)
  (buffer src $T read)
  (buffer out u32 read_write)
$SHARED
$NDECL
  (param nb u32)
  (param lo $T)
  (param hi $T)
  (param scale $ST)
$NLETS
  (let l (lid x))
  (let stride (mul (ngroups x) ${WG}u32))
  (let top (sub nb 1u32))
  (for i (gid x) n stride
    (let x (load src i))
    (let ok (land (ge x lo) (lt x hi)))
    (let b $BIN)
    (if ok (then (atomic add $H (min b top) 1u32))))
$FLUSH)
]])

-- The shared histogram h added into out: each workgroup its nonzero counts.
local FLUSH = T.new("flush", [[
  (barrier)
  (for bi l nb ${WG}u32
    (let c (load h bi))
    (if (gt c 0u32) (then (atomic add out bi c))))]])
local SHARED = T.new("hshared", "  (shared h u32 ${SHARED_BINS})")

local BIN = {
  f32 = "(cast u32 (floor (mul (sub x lo) scale)))",
  f64 = "(cast u32 (floor (mul (sub x lo) scale)))",
  u32 = "(cast u32 (div (mul (cast u64 (sub x lo)) (cast u64 nb)) scale))",
  i32 = "(cast u32 (div (mul (cast u64 (bitcast u32 (sub x lo))) (cast u64 nb)) scale))",
  u64 = "(cast u32 (floor (mul (cast f64 (sub x lo)) scale)))",
  i64 = "(cast u32 (floor (mul (cast f64 (bitcast u64 (sub x lo))) scale)))",
}
local SCALE_TYPE = { f32 = "f32", f64 = "f64", u32 = "u64", i32 = "u64", u64 = "f64",
  i64 = "f64" }

local function kernel(be, t, shared, count)
  local mode = shared and "shared" or "global"
  return U.kernel_n(be, "histogram:" .. t .. ":" .. mode, function(dev)
    return KERNEL:render(U.with_count({
      T = t, MODE = mode, ST = SCALE_TYPE[t], BIN = BIN[t],
      SHARED = shared and SHARED() or "",
      H = shared and "h" or "out",
      FLUSH = shared and FLUSH() or "",
    }, dev))
  end, count, { "(let n n1)" })
end

local function f32(x)
  return (string.unpack("<f", string.pack("<f", x)))
end

--- The scale parameter for type t, bins and [lo, hi) (host-side, documented).
function M.scale(t, bins, lo, hi)
  if t == "f32" then return f32(bins / (f32(hi) - f32(lo))) end
  if t == "f64" then return bins / (hi - lo) end
  if t == "i32" or t == "u32" then return hi - lo end
  local r = hi - lo -- the unsigned difference, held in a Lua integer
  -- as a double rounded once (high and low halves are exact; their sum rounds)
  local rf = (r >> 32) * 4294967296.0 + (r & 0xffffffff)
  return bins / rf
end

local function check_bounds(name, t, lo, hi)
  lo = basic.check_value(name, "lo", t, lo)
  hi = basic.check_value(name, "hi", t, hi)
  if U.is_float(t) then
    if t == "f32" then lo, hi = f32(lo), f32(hi) end
    if lo ~= lo or hi ~= hi or lo == -math.huge or hi == math.huge or lo >= hi then
      U.raise(name, ("[lo, hi) = [%s, %s) is not a finite, non-empty range in %s"):format(
        tostring(lo), tostring(hi), t), "pass finite lo < hi")
    end
  else
    local less
    if t == "u64" then less = math.ult(lo, hi) else less = lo < hi end
    if not less then
      U.raise(name, ("[lo, hi) = [%d, %d) is empty"):format(lo, hi), "pass lo < hi")
    end
  end
  return lo, hi
end

--- Checks the arguments; returns nb, lo, hi, opts.
local function check(name, be, src, bins, lo, hi, opts, allowed)
  U.check_backend(name, be)
  U.check_buffer(name, be, src, "argument 2 (src)", U.NUM_TYPES)
  local nb = math.type(bins) == "integer" and bins or nil
  if not nb or nb < 1 or nb > 0xffffffff then
    U.raise(name, "bins must be an integer in [1, 2^32-1], got " .. tostring(bins),
      "pass the number of bins, e.g. 256")
  end
  lo, hi = check_bounds(name, src.type, lo, hi)
  opts = U.check_opts(name, opts, allowed, 6)
  local out = opts.out
  if out ~= nil then
    U.check_buffer(name, be, out, "opts.out", { "u32" })
    U.check_disjoint(name, out, "opts.out", src, "src",
      "count into a buffer that shares no memory with src")
    if out.count < nb then
      U.raise(name, ("opts.out has %d elements, fewer than the %d bins"):format(out.count, nb),
        "pass a u32 buffer with at least bins elements")
    end
  end
  return nb, lo, hi, opts
end

--- The launches: zero out[0..nb), count src (with count: its first min(count[0], #src)).
local function build(be, src, nb, lo, hi, out, count)
  local steps = {}
  basic.fill_steps(be, out, 0, nb, steps)
  local n, t = src.count, src.type
  if n > 0 then
    local G = math.max(1, math.min(U.MAXG, U.cdiv(n, U.TILE)))
    local a = { src = src, out = out, nb = nb, lo = lo, hi = hi, scale = M.scale(t, nb, lo, hi) }
    if count then a.ncount, a.ncap = count, n else a.n = n end
    steps[#steps + 1] = { kernel(be, t, nb <= M.SHARED_BINS, count), a, { grid = { G } } }
  end
  return steps
end

--- lib.steps.histogram(be, src, bins, lo, hi, {out = u32 Buffer [, count]}) -> steps
function M.steps_form(name, be, src, bins, lo, hi, opts)
  local nb
  nb, lo, hi, opts = check(name, be, src, bins, lo, hi, opts, { "out", "count", "scratch" })
  if opts.out == nil then
    U.raise(name, "opts.out is missing", "pass {out = be:buffer(\"u32\", bins)}: steps "
      .. "allocate nothing")
  end
  U.scratch_of(name, be, opts.scratch)
  return build(be, src, nb, lo, hi, opts.out, U.check_count(name, be, opts.count,
    { { opts.out, "opts.out" } }))
end

function M.histogram(name, timed, be, src, bins, lo, hi, opts)
  local nb
  nb, lo, hi, opts = check(name, be, src, bins, lo, hi, opts, { "out" })
  local out = opts.out or be:buffer("u32", nb)
  local _, timing = U.run(name, be, build(be, src, nb, lo, hi, out), nil, timed)
  return out, timing
end

return M
