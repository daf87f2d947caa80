-- vyre.lib.reduce — deterministic reductions (docs/LIB.md, "reduce").
--
-- One kernel, `lib_reduce_T_OP`, reduces each workgroup's contiguous chunk
-- [g*chunk, min((g+1)*chunk, n)) to part[g]: invocation l folds the elements
-- cbeg+l, cbeg+l+256, cbeg+l+512, ... in that order (loads issued four at a time), then
-- the 256 values are combined by a fixed tree in shared memory (red[l] = red[l] op
-- red[l+half], half = 128, 64, ..., 1). A buffer of more than one tile (2048 elements)
-- takes two passes: n -> G <= 1024 partials -> 1. No float atomics: every operation is
-- in a fixed order, so float sums have the same bits on every run and on every backend.
local U = require("vyre.lib.util")
local T = require("vyre.lib.template")
local F = require("vyre.lib.fragments")
local GEO = require("vyre.lib.geometry")

local M = {}

-- The fold of a chunk: invocation l folds FIRST, FIRST + WG, ... < STOP in that order
-- into $ACC (bound by the caller to the identity), UNROLL loads at a time (a load past
-- the end gives the identity $ID). BEFORE goes between the count and the loop (reduce
-- binds its accumulator there). Shared with segmented_lb, whose long segments reduce
-- their chunks the same way. The unrolled lines follow geometry's UNROLL, so the
-- template's text is built from it once.
local FOLD = (function()
  local lines = {
    "(let @cnt (select (lt $FIRST $STOP) (add (div (sub (sub $STOP $FIRST) 1u32) ${WG}u32) "
      .. "1u32) 0u32))",
    "$BEFORE",
    "(for @k 0u32 @cnt ${UNROLL}u32",
    "  (let @i0 (add $FIRST (mul @k ${WG}u32)))",
    "  (let @v0 (load $SRC @i0))",
  }
  local combine = "$ACC"
  for j = 1, GEO.UNROLL - 1 do
    lines[#lines + 1] = ("  (let @v%d (select (lt (add @k %du32) @cnt) (load $SRC (add @i0 "
      .. "%du32)) $ID))"):format(j, j, j * GEO.WG)
  end
  for j = 0, GEO.UNROLL - 1 do combine = ("($OP %s @v%d)"):format(combine, j) end
  lines[#lines + 1] = "  (set $ACC " .. combine .. "))"
  return T.new("fold", table.concat(lines, "\n"))
end)()

--- The fold fragment: o = {first, stop, src, acc, op, id, before} (texts; before may be "").
function M.fold(o)
  return FOLD({ FIRST = o.first, STOP = o.stop, SRC = o.src, ACC = o.acc, OP = o.op,
    ID = o.id, BEFORE = o.before })
end

local KERNEL = T.new("reduce", [[
(program lib_reduce_$T_$OP (workgroup $WG)
  (buffer src $T read)
  (buffer part $T write)
  (shared red $T $WG)
$NDECL
$NLETS
$CHUNK
  (let first (add cbeg l))
$FOLD
  (store red l acc)
  (barrier)
$TREE
  (if (eq l 0u32) (then (store part g $RESULT))))
]])

-- One level of the tree over red[0..WG): red[l] = red[l] op red[l + half].
local TREE_LEVEL = T.new("tree", [[
  (if (lt l $HALFu32) (then (store red l ($OP (load red l) (load red (add l $HALFu32))))))
  (barrier)]])

--- The tree over red[0..WG) (WG_LOG2 unrolled levels, a barrier after each): a list of
--- instances for a template parameter.
function M.tree(op)
  local out = {}
  local half = GEO.WG // 2
  while half >= 1 do
    out[#out + 1] = TREE_LEVEL({ HALF = half, OP = op })
    half = half // 2
  end
  return out
end

-- The kernel's text; result: what workgroup g stores (the tree's total, or a rewrite).
-- dev: nil, or the lets of a device count (U.with_count).
local function text(t, op, result, dev)
  local id = U.identity(op, t)
  return KERNEL:render(U.with_count({ T = t, OP = op, TREE = M.tree(op), RESULT = result,
    CHUNK = F.CHUNK(), FOLD = M.fold({ first = "first", stop = "cend", src = "src",
      acc = "acc", op = op, id = id, before = ("(let acc %s)"):format(id) }) }, dev,
    { chunk = true }))
end

--- The compiled chunk-reduce kernel of type t and op on be (cached).
function M.kernel(be, t, op)
  return U.kernel(be, "reduce:" .. t .. ":" .. op, function()
    return text(t, op, "(load red 0u32)")
  end)
end

-- The lets of the second pass over the partials under a device count: n = G(n1).
M.PARTS = { "(let c1 " .. U.chunk_expr("n1") .. ")",
  "(let n (div (add n1 (sub c1 1u32)) c1))", "(let chunk n)" }

--- The chunk-reduce kernel; with count, its device-count variant with lets. A float sum of
--- a device count of 0 stores +0.0 (as a plain call returns), not the identity -0.0.
function M.kernel_n(be, t, op, count, lets)
  local result = "(load red 0u32)"
  if count and op == "add" and U.is_float(t) then
    result = ("(select (eq n1 0u32) %s (load red 0u32))"):format(U.zero(t))
  end
  return U.kernel_n(be, "reduce:" .. t .. ":" .. op, function(dev)
    return text(t, op, result, dev)
  end, count, lets)
end

--- Appends to steps the launches reducing src[0..n) (n >= 1) into res[0]; with count (a
--- u32 Buffer), src[0..min(count[0], n)) in the same order as a plain call on that many.
function M.steps(be, t, op, src, n, res, steps, S, count)
  if n <= U.TILE then
    local k = M.kernel_n(be, t, op, count, U.N_ELEMS)
    local a = { src = src, part = res, n = n, chunk = n }
    if count then a = { src = src, part = res, ncount = count, ncap = n } end
    steps[#steps + 1] = { k, a, { grid = { 1 } } }
    return
  end
  local chunk, G = U.chunks(n)
  local part = U.scratch(S or be, "reduce_part", t, U.MAXG)
  if count then
    steps[#steps + 1] = { M.kernel_n(be, t, op, count, U.N_ELEMS),
      { src = src, part = part, ncount = count, ncap = n }, { grid = { G } } }
    steps[#steps + 1] = { M.kernel_n(be, t, op, count, M.PARTS),
      { src = part, part = res, ncount = count, ncap = n }, { grid = { 1 } } }
    return
  end
  local k = M.kernel(be, t, op)
  steps[#steps + 1] = { k, { src = src, part = part, n = n, chunk = chunk }, { grid = { G } } }
  steps[#steps + 1] = { k, { src = part, part = res, n = G, chunk = G }, { grid = { 1 } } }
end

local SIZE = { i32 = 4, u32 = 4, f32 = 4, i64 = 8, u64 = 8, f64 = 8 }
M.SIZE = SIZE

--- Checks the arguments of reduce and its steps form; returns op.
local function check(name, be, buf, op)
  U.check_backend(name, be)
  U.check_buffer(name, be, buf, "argument 2 (buf)", U.NUM_TYPES)
  op = op or "add"
  U.check_op(name, op, { "add", "min", "max" })
  return op
end

local function empty_minmax(name, op)
  U.raise(name, ("%s of an empty buffer has no value"):format(op),
    "check #buf > 0 before reducing with min or max (add of nothing is 0)")
end

--- lib.steps.reduce(be, buf [, op], {out = Buffer [, count =] [, scratch =]}): the steps
--- writing the reduction to out[0].
function M.steps_form(name, be, buf, op, opts)
  if type(op) == "table" and opts == nil then op, opts = nil, op end
  op = check(name, be, buf, op)
  opts = U.check_opts(name, opts, { "out", "count", "scratch" }, 4)
  local out = opts.out
  if out == nil then
    U.raise(name, "opts.out is missing", "pass {out = be:buffer(buf.type, 1)}: the steps "
      .. "write the result there (nothing is read back)")
  end
  U.check_buffer(name, be, out, "opts.out", { buf.type })
  if out.count < 1 then U.raise(name, "opts.out is empty", "pass a buffer of 1 element") end
  U.check_disjoint(name, out, "opts.out", buf, "buf", "reduce into a separate buffer")
  local count = U.check_count(name, be, opts.count, { { out, "opts.out" } })
  local S = U.scratch_of(name, be, opts.scratch)
  local steps = {}
  if buf.count == 0 then
    if op ~= "add" then empty_minmax(name, op) end
    require("vyre.lib.basic").fill_steps(be, out, U.is_float(buf.type) and 0.0 or 0, 1, steps)
    return steps
  end
  M.steps(be, buf.type, op, buf, buf.count, out, steps, S, count)
  return steps
end

function M.reduce(name, timed, be, buf, op)
  op = check(name, be, buf, op)
  local t, n = buf.type, buf.count
  if n == 0 then
    if op ~= "add" then empty_minmax(name, op) end
    local z = U.is_float(t) and 0.0 or 0
    return z, U.no_time()
  end
  local res = U.scratch(be, "reduce_res", t, 1)
  local steps = {}
  M.steps(be, t, op, buf, n, res, steps)
  local out, timing = U.run(name, be, steps, { { res, 1, 1 } }, timed)
  return out[1][1], timing
end

return M
