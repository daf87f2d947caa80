-- vyre.lib — GPU primitives written as vyre programs (docs/LIB.md). Every primitive runs
-- on both backends (the reference interpreter runs the very same programs, so GPU
-- results can be checked against it), works on resident buffers (be:buffer), launches
-- its kernels as one be:sequence (one synchronisation), and reads back only the scalar
-- or count it returns.
--
-- Timing convention: every function `lib.f(...)` has `lib.f_timed(...)`, which returns
-- the same value followed by the timing of its sequence ({wall_ns, device_ns,
-- enqueue_ns, wait_ns}; all 0 when nothing was launched).
--
--   lib.reduce(be, buf [, op])                     -> Lua scalar (op add|min|max)
--   lib.scan(be, src, dst [, op [, {exclusive}]])  -> dst
--   lib.compact(be, src, flags | "pred over x", dst) -> count
--   lib.sort(be, keys [, values] [, {scratch}])    -> keys (sorted in place, stable)
--   lib.histogram(be, src, bins, lo, hi [, {out}]) -> u32 Buffer of bins counts
--   lib.fill(be, buf, value) -> buf;  lib.iota(be, buf [, start [, step]]) -> buf
--   lib.copy(be, src, dst) -> dst
--   lib.segmented_reduce(be, values, offsets, out [, op]) -> out
--   lib.segmented_scan(be, values, offsets, dst [, op [, {exclusive}]]) -> dst
--   lib.release(be)  frees the scratch buffers and kernels kept for be
local U = require("vyre.lib.util")
local reduce = require("vyre.lib.reduce")
local scan = require("vyre.lib.scan")
local compact = require("vyre.lib.compact")
local sort = require("vyre.lib.sort")
local histogram = require("vyre.lib.histogram")
local basic = require("vyre.lib.basic")
local segmented = require("vyre.lib.segmented")

local lib = {}

-- Each implementation is impl(name, timed, ...): the plain name returns its value, the
-- _timed name its value and the timing.
local function export(name, impl)
  lib[name] = function(...)
    return (impl(name, false, ...))
  end
  lib[name .. "_timed"] = function(...)
    return impl(name .. "_timed", true, ...)
  end
end

-- lib.reduce, lib.scan and lib.sort also take a vyre.Group and lists of its Buffers (the ranks'
-- parts of one array; lua/vyre/group_lib.lua, docs/MULTIGPU.md).
local group_lib = require("vyre.group_lib")
local function over_groups(one, many)
  return function(name, timed, x, ...)
    if group_lib.is_group(x) then return many(name, timed, x, ...) end
    return one(name, timed, x, ...)
  end
end
export("reduce", over_groups(reduce.reduce, group_lib.reduce))
export("scan", over_groups(scan.scan, group_lib.scan))
export("compact", compact.compact)
export("sort", over_groups(sort.sort, group_lib.sort))
export("histogram", histogram.histogram)
export("fill", basic.fill)
export("iota", basic.iota)
export("copy", basic.copy)
export("segmented_reduce", segmented.reduce)
export("segmented_scan", segmented.scan)

--- Frees the scratch buffers and drops the compiled kernels vyre.lib keeps for be
--- (they are also collected with the backend).
function lib.release(be)
  U.check_backend("release", be)
  U.release(be)
end

-- The fixed geometry (changing it changes the bits of float sums and scans).
lib.geometry = { workgroup = U.WG, items = U.ITEMS, tile = U.TILE, max_groups = U.MAXG }

return lib
