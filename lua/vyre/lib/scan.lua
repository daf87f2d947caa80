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
local T = require("vyre.lib.template")
local F = require("vyre.lib.fragments")
local GEO = require("vyre.lib.geometry")
local reduce = require("vyre.lib.reduce")
local onepass = require("vyre.lib.scan_onepass")

local M = {}

-- block_scan: statements that scan the shared array $ARR of WG * $M entries in place,
-- invocation l (the caller's `l`) owning the entries l*M .. l*M+M-1 (padded indices in
-- the "bscanp" form). Each invocation folds its entries, the WG sums are scanned
-- (Hillis-Steele, double-buffered in $SA/$SB), and each invocation rewrites its entries
-- starting from $CARRY op its exclusive prefix. The caller names what it reads: $TOT (the
-- tile's total, afterwards), and for $HOOK (text run for each entry before it is
-- rewritten) $I (the entry's index), $X (its value) and $R (its exclusive prefix, carry
-- included). The caller has filled $ARR and passed a barrier; the statements end with a
-- barrier. The index expressions differ by padding, so there is one template per form.
local function block_scan_template(name, padded)
  local function own(j)
    local e = ("(add (mul l $Mu32) %s)"):format(j)
    if not padded then return e end
    return ("(add %s (shr %s ${PAD_SHIFT}u32))"):format(e, e)
  end
  return T.new(name, table.concat({
    "(let @acc $ID)",
    "(for @j 0u32 $Mu32 1u32 (set @acc ($OP @acc (load $ARR " .. own("@j") .. "))))",
    "(store $SA l @acc)",
    "(barrier)",
    "$STEPS",
    "(let $TOT (load $SA ${WG_M1}u32))",
    "(let $R (select (gt l 0u32) ($OP $CARRY (load $SA (sub l 1u32))) $CARRY))",
    "(for @k 0u32 $Mu32 1u32",
    "  (let $I " .. own("@k") .. ")",
    "  (let $X (load $ARR $I))",
    "  $HOOK",
    "  $BODY)",
    "(barrier)",
  }, "\n"))
end
local BLOCK_SCAN = { padded = block_scan_template("bscanp", true),
  plain = block_scan_template("bscan", false) }

-- One Hillis-Steele step over the WG sums: $TO[l] = $FROM[l - D] op $FROM[l] (l >= D).
local HS_STEP = T.new("hsstep", [[
(store $TO l (select (ge l $Du32) ($OP (load $FROM (sub l $Du32)) (load $FROM l)) (load $FROM l)))
(barrier)]])

-- What block_scan does with each entry: store its exclusive or inclusive prefix, or only
-- advance the running prefix (the hook does the rest).
local BODY = {
  exclusive = T.new("bsexcl", "(store $ARR $I $R)\n  (set $R ($OP $R $X))"),
  inclusive = T.new("bsincl", "(set $R ($OP $R $X))\n  (store $ARR $I $R)"),
  none = T.new("bsnone", "(set $R ($OP $R $X))"),
}

--- The block_scan fragment (above). o = {arr, m, t, op, carry, exclusive, store, pad, sa,
--- sb, tot, i, x, r [, hook]}: the texts and names it takes.
function M.block_scan(o)
  local steps, from, to = {}, o.sa, o.sb
  for s = 0, GEO.WG_LOG2 - 1 do
    steps[#steps + 1] = HS_STEP({ TO = to, FROM = from, D = 1 << s, OP = o.op })
    from, to = to, from
  end
  -- after WG_LOG2 (even) steps the inclusive scan of the sums is back in o.sa
  assert(from == o.sa, "vyre.lib internal: block_scan needs an even number of steps")
  local body = o.store and (o.exclusive and BODY.exclusive or BODY.inclusive) or BODY.none
  local bargs = { R = o.r, OP = o.op, X = o.x }
  if o.store then bargs.ARR, bargs.I = o.arr, o.i end
  local tmpl = o.pad and BLOCK_SCAN.padded or BLOCK_SCAN.plain
  return tmpl({ ID = U.identity(o.op, o.t), M = o.m, OP = o.op, ARR = o.arr, SA = o.sa,
    STEPS = steps, TOT = o.tot, R = o.r, CARRY = o.carry, I = o.i, X = o.x,
    HOOK = o.hook or "", BODY = body(bargs) })
end

local KERNEL = T.new("scan", [[
(program lib_scan_$T_$OP_$VARIANT (workgroup $WG)
  (buffer src $T read)
  (buffer dst $T write)
$DECLS
  (shared tile $T $TILEP)
  (shared sa $T $WG)
  (shared sb $T $WG)
$NDECL
$NLETS
$CHUNK
$TILES
  (let carry $CARRY0)
  (for t 0u32 ntiles 1u32
    (let base (add cbeg (mul t ${TILE}u32)))
    (for j 0u32 ${ITEMS}u32 1u32
      (let k (add (mul j ${WG}u32) l))
      (let gi (add base k))
      (store tile $PK (select (lt gi cend) (load src gi) $ID)))
    (barrier)
$SCAN
    (for j2 0u32 ${ITEMS}u32 1u32
      (let k2 (add (mul j2 ${WG}u32) l))
      (let gi2 (add base k2))
      (if (lt gi2 cend) (then (store dst gi2 (load tile $PK2)))))
    (set carry ($OP carry ttot))
    (barrier))
$TAIL)
]])

local DECL = T.new("decl", "  (buffer $NAME $T $MODE)")
local CARRY_PART = T.new("carrypart", "(select (eq g 0u32) $INIT (load part g))")
local TAIL = T.new("scantail", "  (if (eq l 0u32) (then (store total 0u32 carry)))")

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
  return U.kernel_n(be, ("scan:%s:%s:%s"):format(t, op, variant), function(dev)
    local init = M.init(op, t, exclusive)
    local decls = {}
    if carry == "part" then decls[#decls + 1] = DECL({ NAME = "part", T = t, MODE = "read" }) end
    if total then decls[#decls + 1] = DECL({ NAME = "total", T = t, MODE = "write" }) end
    local carry0 = init
    if carry == "part" then carry0 = CARRY_PART({ INIT = init }) end
    local scan = M.block_scan({ arr = "tile", m = GEO.ITEMS, t = t, op = op, carry = "carry",
      exclusive = exclusive, store = true, pad = true, sa = "sa", sb = "sb", tot = "ttot",
      i = "ti", x = "tx", r = "tr" })
    return KERNEL:render(U.with_count({ CHUNK = F.CHUNK(),
      T = t, OP = op, VARIANT = variant, ID = U.identity(op, t), CARRY0 = carry0,
      DECLS = decls, SCAN = scan, PK = U.pad("k"), PK2 = U.pad("k2"),
      TAIL = total and TAIL() or "",
    }, dev, { chunk = true, tiles = true }))
  end, count, lets)
end

-- The most elements step 3 scans alone, in one workgroup (8 tiles).
local SINGLE = GEO.SINGLE_TILES * U.TILE

-- Device-count lets (U.with_count): the single-workgroup scan; and the three passes, which
-- do what the single scan does when the count is at most SINGLE (pass 1 and 2 idle, pass
-- 3's workgroup 0 scans everything from the init).
local SMALL = ("(let small (le n1 %du32))"):format(SINGLE)
local CH = U.chunk_expr("n1")
local DEV = {
  single = { "(let n n1)", "(let chunk n1)",
    ("(let ntmax (div (add ncap %du32) %du32))"):format(GEO.TILE_M1, GEO.TILE) },
  reduce = { SMALL, "(let n (select small 0u32 n1))", "(let chunk " .. CH .. ")" },
  parts = { "(let c1 " .. CH .. ")", ("(let n (select (le n1 %du32) 0u32 "
    .. "(div (add n1 (sub c1 1u32)) c1)))"):format(SINGLE), "(let chunk n)" },
  chunks = { SMALL, "(let n n1)", "(let chunk (select small n1 " .. CH .. "))",
    ("(let ntmax (max (div (add (min ncap %du32) %du32) %du32) (div %s %du32)))"):format(
      SINGLE, GEO.TILE_M1, GEO.TILE, U.chunk_expr("ncap"), GEO.TILE) },
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
  if ntiles <= GEO.SINGLE_TILES then
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
