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
--   lib.sort(be, keys [, values] [, {scratch, bits, order}]) -> keys (in place, stable)
--   lib.histogram(be, src, bins, lo, hi [, {out}]) -> u32 Buffer of bins counts
--   lib.fill(be, buf, value) -> buf;  lib.iota(be, buf [, start [, step]]) -> buf
--   lib.copy(be, src, dst) -> dst
--   lib.segmented_reduce(be, values, offsets, out [, op]) -> out
--   lib.segmented_scan(be, values, offsets, dst [, op [, {exclusive}]]) -> dst
--   lib.argsort(be, keys [, {bits, order, out}])   -> u32 Buffer of source positions
--   lib.unique(be, src, dst)                       -> count (sorted input)
--   lib.run_length(be, src, values_out, counts_out) -> count (sorted input)
--   lib.reduce_by_key(be, keys, values, keys_out, values_out [, op]) -> count
--   lib.release(be)  frees the scratch buffers and kernels kept for be
--   lib.kernel_cache(be [, {limit}])  the kernel cache's counters (and its bound)
--
-- Steps forms: lib.steps.NAME(be, ...) takes NAME's arguments (and an opts table with
-- out = a Buffer for a scalar result, count = a u32 Buffer for a device count where
-- supported, scratch = lib.scratch(be)) and returns the steps ({kernel, args, opts}) of
-- the call, for be:sequence, be:graph and be:megakernel; nothing is read back and
-- nothing is allocated when they run. The plain functions run their steps forms' steps.
-- lib.steps.expand(be, {rowptr, col, frontier, visit, ...}) has no plain form: it is one
-- worklist round over a CSR graph, for the caller's round loop (docs/GRID.md).
local U = require("vyre.lib.util")
local reduce = require("vyre.lib.reduce")
local scan = require("vyre.lib.scan")
local compact = require("vyre.lib.compact")
local sort = require("vyre.lib.sort")
local histogram = require("vyre.lib.histogram")
local basic = require("vyre.lib.basic")
local segmented = require("vyre.lib.segmented")
local runs = require("vyre.lib.runs")
local expand = require("vyre.lib.expand")

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
export("argsort", sort.argsort)
export("unique", runs.plain("unique"))
export("run_length", runs.plain("run_length"))
export("reduce_by_key", runs.plain("reduce_by_key"))

-- Steps forms: impl(name, be, ...) -> steps; errors name "vyre.lib.steps.NAME".
lib.steps = {}
local STEPS = {
  reduce = reduce.steps_form, scan = scan.steps_form, compact = compact.steps_form,
  sort = sort.steps_form, argsort = sort.argsort_steps_form,
  histogram = histogram.steps_form, fill = basic.steps_form("fill"),
  iota = basic.steps_form("iota"), copy = basic.steps_form("copy"),
  segmented_reduce = segmented.reduce_steps_form, segmented_scan = segmented.scan_steps_form,
  unique = runs.steps_form("unique"), run_length = runs.steps_form("run_length"),
  reduce_by_key = runs.steps_form("reduce_by_key"),
  expand = expand.steps_form, -- a worklist round over a CSR graph (docs/GRID.md)
}
for fname, impl in pairs(STEPS) do
  lib.steps[fname] = function(...)
    return impl("steps." .. fname, ...)
  end
end

--- A scratch object for the steps forms (opts.scratch): the scratch buffers of the steps
--- built with it, grown when a bigger call is built, never freed while it lives (keep it
--- alive as long as the steps; :free() frees its buffers).
function lib.scratch(be)
  U.check_backend("scratch", be)
  return U.new_scratch(be, false)
end

--- Frees the scratch buffers and drops the compiled kernels vyre.lib keeps for be
--- (they are also collected with the backend).
function lib.release(be)
  U.check_backend("release", be)
  U.release(be)
end

--- be's kernel cache: {entries, limit, hits, misses, evictions}. vyre.lib keeps at most
--- `limit` compiled kernels per backend (default 1024, $VYRE_LIB_KERNEL_CACHE), the least
--- recently used dropped first; opts.limit sets it for every backend.
function lib.kernel_cache(be, opts)
  U.check_backend("kernel_cache", be)
  if opts ~= nil and type(opts) ~= "table" then
    U.raise("kernel_cache", "opts must be a table (got " .. type(opts) .. ")",
      "e.g. {limit = 4096}")
  end
  return U.kernel_cache(be, opts)
end

-- The fixed geometry (changing it changes the bits of float sums and scans).
lib.geometry = { workgroup = U.WG, items = U.ITEMS, tile = U.TILE, max_groups = U.MAXG }

return lib
