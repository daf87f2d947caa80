-- vyre.lib.scan — prefix scans across any number of workgroups (docs/LIB.md, "scan").
--
-- Reduce-then-scan with a bounded number of workgroups, so there is no recursion:
--   1. `lib_reduce_T_OP` (reduce.lua) reduces each workgroup's chunk to part[g];
--   2. one workgroup scans part[0..G) exclusively, in place (G <= 1024: one tile);
--   3. each workgroup scans its chunk tile by tile (2048 elements: 8 per invocation),
--      starting from the carry part[g] and carrying each tile's total to the next.
-- At most 16384 elements (8 tiles) are scanned by step 3 alone, in one workgroup.
-- The tile scan (block_scan) is shared with compact and sort.
local U = require("vyre.lib.util")
local reduce = require("vyre.lib.reduce")
local onepass = require("vyre.lib.scan_onepass")

local M = {}

--- Statements that scan the shared array o.arr of WG * o.m entries in place, invocation l
--- owning the entries l*m .. l*m+m-1 (padded indices when o.pad). Each invocation folds
--- its entries, the 256 sums are scanned (Hillis-Steele, double-buffered in o.sa/o.sb),
--- and each invocation rewrites its entries starting from op(o.carry, its exclusive
--- prefix). Names start with o.p; afterwards <p>tot holds the tile's total. o.hook, when
--- given, is text run for each entry before it is rewritten, with <p>i (its index),
--- <p>x (its value) and <p>r (its exclusive prefix, carry included) in scope. The caller
--- has filled o.arr and passed a barrier; the statements end with a barrier.
function M.block_scan(o)
  local p, op, t = o.p, o.op, o.t
  local function ix(e) return o.pad and U.pad(e) or e end
  local own = ("(add (mul l %du32) %s)"):format(o.m, "%s")
  local L = {}
  local function add(s) L[#L + 1] = s end
  add(("(let %sacc %s)"):format(p, U.identity(op, t)))
  add(("(for %sj 0u32 %du32 1u32 (set %sacc (%s %sacc (load %s %s))))"):format(
    p, o.m, p, op, p, o.arr, ix(own:format(p .. "j"))))
  add(("(store %s l %sacc)"):format(o.sa, p))
  add("(barrier)")
  local from, to = o.sa, o.sb
  for s = 0, 7 do
    local d = 1 << s
    add(("(store %s l (select (ge l %du32) (%s (load %s (sub l %du32)) (load %s l)) "
      .. "(load %s l)))"):format(to, d, op, from, d, from, from))
    add("(barrier)")
    from, to = to, from
  end
  -- after 8 steps the inclusive scan of the sums is back in o.sa
  add(("(let %stot (load %s 255u32))"):format(p, o.sa))
  add(("(let %sr (select (gt l 0u32) (%s %s (load %s (sub l 1u32))) %s))"):format(
    p, op, o.carry, o.sa, o.carry))
  local body = {}
  body[#body + 1] = ("(let %si %s)"):format(p, ix(own:format(p .. "k")))
  body[#body + 1] = ("(let %sx (load %s %si))"):format(p, o.arr, p)
  if o.hook then body[#body + 1] = o.hook end
  if o.store then
    if o.exclusive then
      body[#body + 1] = ("(store %s %si %sr)"):format(o.arr, p, p)
      body[#body + 1] = ("(set %sr (%s %sr %sx))"):format(p, op, p, p)
    else
      body[#body + 1] = ("(set %sr (%s %sr %sx))"):format(p, op, p, p)
      body[#body + 1] = ("(store %s %si %sr)"):format(o.arr, p, p)
    end
  else
    body[#body + 1] = ("(set %sr (%s %sr %sx))"):format(p, op, p, p)
  end
  add(("(for %sk 0u32 %du32 1u32\n  %s)"):format(p, o.m, table.concat(body, "\n  ")))
  add("(barrier)")
  return table.concat(L, "\n")
end

local KERNEL = [[
(program lib_scan_$T_$OP_$VARIANT (workgroup 256)
  (buffer src $T read)
  (buffer dst $T write)
$DECLS
  (shared tile $T 2112)
  (shared sa $T 256)
  (shared sb $T 256)
  (param n u32)
  (param chunk u32)
  (let l (lid x))
  (let g (wgid x))
  (let cbeg (min (mul g chunk) n))
  (let cend (select (lt chunk (sub n cbeg)) (add cbeg chunk) n))
  (let ntiles (div (add (sub cend cbeg) 2047u32) 2048u32))
  (let carry $CARRY0)
  (for t 0u32 ntiles 1u32
    (let base (add cbeg (mul t 2048u32)))
    (for j 0u32 8u32 1u32
      (let k (add (mul j 256u32) l))
      (let gi (add base k))
      (store tile (add k (shr k 5u32)) (select (lt gi cend) (load src gi) $ID)))
    (barrier)
$SCAN
    (for j2 0u32 8u32 1u32
      (let k2 (add (mul j2 256u32) l))
      (let gi2 (add base k2))
      (if (lt gi2 cend) (then (store dst gi2 (load tile (add k2 (shr k2 5u32)))))))
    (set carry ($OP carry bs_tot))
    (barrier))
$TAIL)
]]

--- The value an exclusive scan starts from: the identity, except +0.0 for float add
--- (the identity -0.0 would surprise; -0.0 + x and +0.0 + x differ only for x = -0.0).
function M.init(op, t, exclusive)
  if exclusive and op == "add" and U.is_float(t) then return U.zero(t) end
  return U.identity(op, t)
end

--- The tile-scan kernel: exclusive or inclusive; carry "part" (part[g] for g > 0, the
--- init for g = 0) or "none" (the init); total: also store the final carry in total[0].
--- With count, its device-count variant with lets (U.kernel_n).
function M.kernel(be, t, op, exclusive, carry, total, count, lets)
  local variant = (exclusive and "e" or "i") .. (carry == "part" and "c" or "n")
    .. (total and "t" or "")
  return U.kernel_n(be, ("scan:%s:%s:%s"):format(t, op, variant), function()
    local init = M.init(op, t, exclusive)
    local decls = {}
    if carry == "part" then decls[#decls + 1] = ("  (buffer part %s read)"):format(t) end
    if total then decls[#decls + 1] = ("  (buffer total %s write)"):format(t) end
    local carry0 = init
    if carry == "part" then
      carry0 = ("(select (eq g 0u32) %s (load part g))"):format(init)
    end
    local scan = M.block_scan({ p = "bs_", arr = "tile", m = 8, t = t, op = op,
      carry = "carry", exclusive = exclusive, store = true, pad = true, sa = "sa", sb = "sb" })
    return U.fill(KERNEL, {
      T = t, OP = op, VARIANT = variant, ID = U.identity(op, t), CARRY0 = carry0,
      DECLS = table.concat(decls, "\n"),
      SCAN = "    " .. scan:gsub("\n", "\n    "),
      TAIL = total and "  (if (eq l 0u32) (then (store total 0u32 carry)))" or "",
    })
  end, count, lets)
end

-- The most elements step 3 scans alone, in one workgroup (8 tiles).
local SINGLE = 8 * U.TILE

-- Device-count lets (U.dev_text): the single-workgroup scan; and the three passes, which
-- do what the single scan does when the count is at most SINGLE (pass 1 and 2 idle, pass
-- 3's workgroup 0 scans everything from the init).
local SMALL = ("(let small (le n1 %du32))"):format(SINGLE)
local CH = U.chunk_expr("n1")
local DEV = {
  single = { "(let n n1)", "(let chunk n1)", "(let ntmax (div (add ncap 2047u32) 2048u32))" },
  reduce = { SMALL, "(let n (select small 0u32 n1))", "(let chunk " .. CH .. ")" },
  parts = { "(let c1 " .. CH .. ")", ("(let n (select (le n1 %du32) 0u32 "
    .. "(div (add n1 (sub c1 1u32)) c1)))"):format(SINGLE), "(let chunk n)" },
  chunks = { SMALL, "(let n n1)", "(let chunk (select small n1 " .. CH .. "))",
    ("(let ntmax (max (div (add (min ncap %du32) 2047u32) 2048u32) (div %s 2048u32)))"):format(
      SINGLE, U.chunk_expr("ncap")) },
}

--- Appends the launches that scan src[0..n) into dst[0..n) (n >= 1; dst may be src);
--- with count (a u32 Buffer), the first min(count[0], n) elements as a plain call would.
function M.steps(be, t, op, exclusive, src, dst, n, steps, S, count)
  -- single pass (scan_onepass.lua) when the count is known on the host; a device count
  -- (steps forms' opts.count) takes the reduce-then-scan passes below, whose geometry
  -- follows the count on the device
  if onepass.config.enabled and not count then
    return onepass.scan_steps(be, t, op, exclusive, src, dst, n, steps)
  end
  local function args(a)
    if count then a.n, a.chunk, a.ncount, a.ncap = nil, nil, count, n end
    return a
  end
  local ntiles = U.cdiv(n, U.TILE)
  if ntiles <= 8 then
    steps[#steps + 1] = { M.kernel(be, t, op, exclusive, "none", false, count, DEV.single),
      args({ src = src, dst = dst, n = n, chunk = n }), { grid = { 1 } } }
    return
  end
  local chunk, G = U.chunks(n)
  local part = U.scratch(S or be, "scan_part", t, U.MAXG)
  steps[#steps + 1] = { reduce.kernel_n(be, t, op, count, DEV.reduce),
    args({ src = src, part = part, n = n, chunk = chunk }), { grid = { G } } }
  steps[#steps + 1] = { M.kernel(be, t, op, true, "none", false, count, DEV.parts),
    args({ src = part, dst = part, n = G, chunk = G }), { grid = { 1 } } }
  steps[#steps + 1] = { M.kernel(be, t, op, exclusive, "part", false, count, DEV.chunks),
    args({ src = src, dst = dst, part = part, n = n, chunk = chunk }), { grid = { G } } }
end

--- Checks the arguments of scan and its steps form; returns op, opts.
local function check(name, be, src, dst, op, opts, allowed)
  U.check_backend(name, be)
  U.check_buffer(name, be, src, "argument 2 (src)", U.NUM_TYPES)
  U.check_buffer(name, be, dst, "argument 3 (dst)", U.NUM_TYPES)
  if type(op) == "table" and opts == nil then op, opts = nil, op end -- scan(be, s, d, opts)
  op = op or "add"
  U.check_op(name, op, { "add", "min", "max" })
  opts = U.check_opts(name, opts, allowed, 5)
  if src.type ~= dst.type then
    U.raise(name, ("src is %s but dst is %s"):format(src.type, dst.type),
      "scan into a buffer of the same type (or pass the same buffer twice: in place)")
  end
  if src.count ~= dst.count then
    U.raise(name, ("src has %d elements but dst has %d"):format(src.count, dst.count),
      "scan into a buffer of the same length")
  end
  if opts.exclusive ~= nil and type(opts.exclusive) ~= "boolean" then
    U.raise(name, "opts.exclusive must be a boolean", "pass {exclusive = true} or nothing")
  end
  -- In place (dst starts where src does) works; a shifted overlap would let one tile
  -- read elements another has already written.
  U.check_disjoint(name, dst, "dst", src, "src",
    "scan into src itself (in place) or into a buffer that shares no memory with src", true)
  return op, opts
end

--- lib.steps.scan(be, src, dst [, op] [, {exclusive, count, scratch}]) -> steps
function M.steps_form(name, be, src, dst, op, opts)
  op, opts = check(name, be, src, dst, op, opts, { "exclusive", "count", "scratch" })
  local count = U.check_count(name, be, opts.count, { { dst, "dst" } })
  local S = U.scratch_of(name, be, opts.scratch)
  local steps = {}
  if src.count > 0 then
    M.steps(be, src.type, op, opts.exclusive == true, src, dst, src.count, steps, S, count)
  end
  return steps
end

function M.scan(name, timed, be, src, dst, op, opts)
  op, opts = check(name, be, src, dst, op, opts, { "exclusive" })
  local steps = {}
  if src.count > 0 then
    M.steps(be, src.type, op, opts.exclusive == true, src, dst, src.count, steps)
  end
  local _, timing = U.run(name, be, steps, nil, timed)
  return dst, timing
end

return M
