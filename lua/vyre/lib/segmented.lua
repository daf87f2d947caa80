-- vyre.lib.segmented — reductions and scans over CSR segments (docs/LIB.md).
--
-- Segment s covers values[offsets[s] .. offsets[s+1]) clipped to the buffer. First
-- version: one invocation per segment folds its segment left to right (float results are
-- the sequential fold, the same bits on both backends). Work O(#values + #segments);
-- span O(longest segment), and the loads of one invocation are not coalesced, so few
-- long segments run slowly: fine for many short segments (e-graph classes). Both are
-- load-balanced now (segmented_lb.lua, segmented_scan_lb.lua): segments longer than 4096
-- elements are split into chunks over the whole grid; `config.enabled = false` there
-- restores the one-invocation-per-segment kernels below.
local U = require("vyre.lib.util")
local T = require("vyre.lib.template")
local F = require("vyre.lib.fragments")
local scan = require("vyre.lib.scan")
local lb = require("vyre.lib.segmented_lb")
local slb = require("vyre.lib.segmented_scan_lb")

local M = {}

local REDUCE = T.new("segreduce", [[
(program lib_segreduce_$T_$OP (workgroup $WG)
  (buffer values $T read)
  (buffer offsets u32 read)
  (buffer out $T write)
  (param nseg u32)
  (let s (gid x))
  (if (lt s nseg)
    (then
$SEGMENT
      (let acc $EMPTY)
      (if (lt b e)
        (then
          (set acc (load values b))
          $FOLD))
      (store out s acc))))
]])

local SCAN = T.new("segscan", [[
(program lib_segscan_$T_$OP_$E (workgroup $WG)
  (buffer values $T read)
  (buffer offsets u32 read)
  (buffer dst $T write)
  (param nseg u32)
  (let s (gid x))
  (if (lt s nseg)
    (then
$SEGMENT
      (if (lt b e)
        (then
          (let x0 (load values b))
          (store dst b $FIRST)
          (let acc x0)
          (for i (add b 1u32) e 1u32
            (let xi (load values i))
$STEP))))))
]])

local OPS = { "add", "min", "max" }

-- Segment s of the invocation: nv, b, e.
local function SEG() return F.SEGMENT({ S = "s", B = "b", E = "e" }) end

local function check_common(name, be, values, offsets, out, what, op)
  U.check_backend(name, be)
  U.check_buffer(name, be, values, "argument 2 (values)", U.NUM_TYPES)
  U.check_buffer(name, be, offsets, "argument 3 (offsets)", { "u32" })
  U.check_buffer(name, be, out, what, U.NUM_TYPES)
  U.check_op(name, op, OPS)
  if offsets.count < 1 then
    U.raise(name, "offsets is empty",
      "pass nsegments + 1 offsets (CSR), e.g. {0} for no segment")
  end
  if out.type ~= values.type then
    U.raise(name, ("values is %s but %s is %s"):format(values.type, what, out.type),
      "use buffers of the same type")
  end
  return offsets.count - 1
end

local function check_reduce(name, be, values, offsets, out, op)
  op = op or "add"
  local nseg = check_common(name, be, values, offsets, out, "argument 4 (out)", op)
  if out.count < nseg then
    U.raise(name, ("out has %d elements for %d segments"):format(out.count, nseg),
      "pass an out buffer with #offsets - 1 elements")
  end
  U.check_disjoint(name, out, "out", values, "values",
    "reduce into a buffer that shares no memory with values")
  U.check_disjoint(name, out, "out", offsets, "offsets",
    "reduce into a buffer that shares no memory with offsets")
  return op, nseg
end

local function reduce_steps(be, values, offsets, out, op, nseg)
  local t = values.type
  local steps = {}
  if nseg > 0 and lb.config.enabled then -- load-balanced (segmented_lb.lua)
    lb.reduce_steps(be, values, offsets, out, op, nseg, steps)
  elseif nseg > 0 then
    local k = U.kernel(be, "segreduce:" .. t .. ":" .. op, function()
      return REDUCE:render({ T = t, OP = op, EMPTY = U.empty_value(op, t), SEGMENT = SEG(),
        FOLD = F.SEQFOLD({ B = "b", E = "e", ACC = "acc", OP = op }) })
    end)
    steps[1] = { k, { values = values, offsets = offsets, out = out, nseg = nseg },
      { grid = { U.cdiv(nseg, U.WG) } } }
  end
  return steps
end

function M.reduce(name, timed, be, values, offsets, out, op)
  local nseg
  op, nseg = check_reduce(name, be, values, offsets, out, op)
  local _, timing = U.run(name, be, reduce_steps(be, values, offsets, out, op, nseg), nil,
    timed)
  return out, timing
end

--- lib.steps.segmented_reduce(be, values, offsets, out [, op] [, {scratch}]) -> steps
function M.reduce_steps_form(name, be, values, offsets, out, op, opts)
  if type(op) == "table" and opts == nil then op, opts = nil, op end
  local nseg
  op, nseg = check_reduce(name, be, values, offsets, out, op)
  opts = U.check_opts(name, opts, { "scratch" }, 6)
  U.scratch_of(name, be, opts.scratch)
  return reduce_steps(be, values, offsets, out, op, nseg)
end

local function check_scan(name, be, values, offsets, dst, op, opts, allowed)
  if type(op) == "table" and opts == nil then op, opts = nil, op end -- (..., dst, opts)
  op = op or "add"
  local nseg = check_common(name, be, values, offsets, dst, "argument 4 (dst)", op)
  opts = U.check_opts(name, opts, allowed, 6)
  if opts.exclusive ~= nil and type(opts.exclusive) ~= "boolean" then
    U.raise(name, "opts.exclusive must be a boolean", "pass {exclusive = true} or nothing")
  end
  if dst.count ~= values.count then
    U.raise(name, ("values has %d elements but dst has %d"):format(values.count, dst.count),
      "scan into a buffer of the same length (or values itself: in place)")
  end
  -- In place works (each element is read before it is written, by one invocation); a
  -- shifted overlap or a dst over the offsets races.
  U.check_disjoint(name, dst, "dst", values, "values",
    "scan into values itself (in place) or into a buffer that shares no memory with it", true)
  U.check_disjoint(name, dst, "dst", offsets, "offsets",
    "scan into a buffer that shares no memory with offsets")
  return op, opts, nseg
end

local function scan_steps(be, S, values, offsets, dst, op, excl, nseg)
  local t = values.type
  local steps = {}
  if nseg > 0 and slb.config.enabled then -- load-balanced (segmented_scan_lb.lua)
    slb.scan_steps(be, S, values, offsets, dst, op, excl, nseg, steps)
  elseif nseg > 0 then
    local k = U.kernel(be, "segscan:" .. t .. ":" .. op .. ":" .. tostring(excl), function()
      return SCAN:render({ T = t, OP = op, E = excl and "e" or "i",
        FIRST = excl and scan.init(op, t, true) or "x0", SEGMENT = SEG(),
        STEP = F.scanstep(op, excl and "acc" or nil) })
    end)
    steps[1] = { k, { values = values, offsets = offsets, dst = dst, nseg = nseg },
      { grid = { U.cdiv(nseg, U.WG) } } }
  end
  return steps
end

function M.scan(name, timed, be, values, offsets, dst, op, opts)
  local nseg
  op, opts, nseg = check_scan(name, be, values, offsets, dst, op, opts, { "exclusive" })
  local _, timing = U.run(name, be, scan_steps(be, be, values, offsets, dst, op,
    opts.exclusive == true, nseg), nil, timed)
  return dst, timing
end

--- lib.steps.segmented_scan(be, values, offsets, dst [, op] [, {exclusive, scratch}])
function M.scan_steps_form(name, be, values, offsets, dst, op, opts)
  local nseg
  op, opts, nseg = check_scan(name, be, values, offsets, dst, op, opts,
    { "exclusive", "scratch" })
  local S = U.scratch_of(name, be, opts.scratch)
  return scan_steps(be, S, values, offsets, dst, op, opts.exclusive == true, nseg)
end

return M
