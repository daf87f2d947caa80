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

local M = {}

local KERNEL = [[
(program lib_reduce_$T_$OP (workgroup 256)
  (buffer src $T read)
  (buffer part $T write)
  (shared red $T 256)
  (param n u32)
  (param chunk u32)
  (let l (lid x))
  (let g (wgid x))
  (let cbeg (min (mul g chunk) n))
  (let cend (select (lt chunk (sub n cbeg)) (add cbeg chunk) n))
  (let first (add cbeg l))
  (let cnt (select (lt first cend) (add (div (sub (sub cend first) 1u32) 256u32) 1u32) 0u32))
  (let acc $ID)
  (for k 0u32 cnt 4u32
    (let i0 (add first (mul k 256u32)))
    (let v0 (load src i0))
    (let v1 (select (lt (add k 1u32) cnt) (load src (add i0 256u32)) $ID))
    (let v2 (select (lt (add k 2u32) cnt) (load src (add i0 512u32)) $ID))
    (let v3 (select (lt (add k 3u32) cnt) (load src (add i0 768u32)) $ID))
    (set acc ($OP ($OP ($OP ($OP acc v0) v1) v2) v3)))
  (store red l acc)
  (barrier)
$TREE
  (if (eq l 0u32) (then (store part g (load red 0u32)))))
]]

--- The tree over red[0..256) as text (8 unrolled levels, a barrier after each).
function M.tree(op)
  local out = {}
  local half = 128
  while half >= 1 do
    out[#out + 1] = ("  (if (lt l %du32) (then (store red l (%s (load red l) "
      .. "(load red (add l %du32))))))\n  (barrier)"):format(half, op, half)
    half = half // 2
  end
  return table.concat(out, "\n")
end

--- The compiled chunk-reduce kernel of type t and op on be (cached).
function M.kernel(be, t, op)
  return U.kernel(be, "reduce:" .. t .. ":" .. op, function()
    return U.fill(KERNEL, { T = t, OP = op, ID = U.identity(op, t), TREE = M.tree(op) })
  end)
end

-- The lets of the second pass over the partials under a device count: n = G(n1).
M.PARTS = { "(let c1 " .. U.chunk_expr("n1") .. ")",
  "(let n (div (add n1 (sub c1 1u32)) c1))", "(let chunk n)" }

local function gen(t, op)
  return function()
    return U.fill(KERNEL, { T = t, OP = op, ID = U.identity(op, t), TREE = M.tree(op) })
  end
end

--- The chunk-reduce kernel; with count, its device-count variant with lets. A float sum of
--- a device count of 0 stores +0.0 (as a plain call returns), not the identity -0.0.
function M.kernel_n(be, t, op, count, lets)
  local g = gen(t, op)
  if count and op == "add" and U.is_float(t) then
    local plain = g
    g = function()
      local text, k = plain():gsub("%(store part g %(load red 0u32%)%)",
        ("(store part g (select (eq n1 0u32) %s (load red 0u32)))"):format(U.zero(t)))
      assert(k == 1, "vyre.lib internal: no final store to rewrite")
      return text
    end
  end
  return U.kernel_n(be, "reduce:" .. t .. ":" .. op, g, count, lets)
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
