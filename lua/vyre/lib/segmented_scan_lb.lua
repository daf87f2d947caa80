-- vyre.lib.segmented_scan_lb — load-balanced segmented scan (docs/LIB.md, "segmented").
--
-- The offsets stay on the device, so the balance is decided there, in four launches:
--   0. reset: the list counters (meta[0] entries, meta[1] chunk slots) to zero;
--   1. short: one invocation per segment. A segment of at most LONG elements is scanned
--      left to right by its invocation (the same bits as ever). A longer one takes
--      ceil(len / CHUNK) consecutive chunk slots from a counter and an entry in a list
--      (segment, first slot, chunks), as segmented reduce's launch 1 does;
--   2. partials: one workgroup per chunk slot the host can bound. It finds the entry
--      that owns its slot and computes its chunk's total P by the chunk tree below;
--   3. scan: one workgroup per chunk slot again: the carry into chunk c of its segment,
--      C_c, is the chunk tree over the partials P_0 .. P_{c-1} (from a later launch, so
--      no flags or spinning); then every element of the chunk gets its value.
-- A long segment is so an ordinary scan over (segment head, value) pairs, cut into
-- chunks; nothing waits on the long segment's length but the O(len / CHUNK) carries.
--
-- The chunk tree of a list of at most 256 * q values (q per invocation, consecutive):
--   s_l   = x_{lq} op x_{lq+1} op ... (left fold from the identity N: invocation l's q)
--   w_l   = Hillis-Steele inclusive scan of s over the 32 lanes of l's warp
--           (subgroup_scan, docs/SUBGROUPS.md)
--   S_l   = (((N op T_0) op T_1) ... op T_{w-1}) op w_l, T_k = warp k's last w
--   total = S_255;  S_{-1} = N
-- and element k of invocation l in chunk c (q = CHUNK / 256) is
--   inclusive: ((C_c op S_{l-1}) op x_{lq}) op ... op x_{lq+k}
--   exclusive: the same without x_{lq+k}; the segment's first element gets the
--              exclusive init of lib.scan (+0.0 for float add, else the identity).
-- N is op's exact identity (-0.0 for float add, NaN for float min/max), so N op x = x
-- bit for bit. The order depends only on the segment's length and position, never on
-- timing: the same bits on every run, device and backend. Integer add, min and max give
-- the left fold's bits in any order.
local U = require("vyre.lib.util")
local T = require("vyre.lib.template")
local G = require("vyre.lib.geometry")
local F = require("vyre.lib.fragments")
local scan = require("vyre.lib.scan")

local M = {}

-- LONG: longer segments are split (shorter ones keep the left fold); CHUNK: elements per
-- chunk, a multiple of WG. Geometry's by default (segmented reduce splits at the same
-- sizes); tunable for tests and device experiments, so the kernels take them as
-- parameters.
M.config = { enabled = true, LONG = G.SEG_LONG, CHUNK = G.SEG_CHUNK }

local SHORT = T.new("segscanshort", [[
(program lib_segscan_short_$T_$OP_$E (workgroup $WG)
  (buffer values $T read)
  (buffer offsets u32 read)
  (buffer dst $T write)
  (buffer meta u32 read_write)
  (buffer lng u32 write)
  (buffer lbase u32 write)
  (buffer lnch u32 write)
  (param nseg u32)
  (param cap u32)
  (let s (gid x))
  (if (lt s nseg)
    (then
$SEGMENT
$REGISTER
      (if (land (lnot long) (lt b e))
        (then
          (let x0 (load values b))
          (store dst b $FIRST)
          (let acc x0)
          (for i (add b 1u32) e 1u32
            (let xi (load values i))
$STEP))))))
]])

-- The owner lookup and chunk bounds both long launches share: the entry whose slots hold
-- this workgroup (ow = entry + 1, 0: none), its segment [sb, se), chunk c = g - base
-- covering [cb, ce), and invocation l's fold s_acc of its $IT values from t0 and their
-- warp scan s_w (the warp totals in ws). Binds those names in the kernel's scope. Every
-- statement runs in every invocation (barriers stay uniform); the owner only guards
-- loads and stores.
local OWNER = T.new("segscanowner", [[
  (let l (lid x))
  (let g (wgid x))
  (let lane (and l ${WARP_M1}u32))
  (let w (shr l ${WARP_LOG2}u32))
  (if (eq l 0u32) (then (store own 0u32 0u32)))
  (barrier)
  (let m (load meta 0u32))
  (for @q l m ${WG}u32
    (let @qb (load lbase @q))
    (if (land (ge g @qb) (lt (sub g @qb) (load lnch @q))) (then (store own 0u32 (add @q 1u32)))))
  (barrier)
  (let ow (load own 0u32))
  (let pos (sub ow 1u32))
  (let sg (load lng pos))
$SEGMENT
  (let base (load lbase pos))
  (let c (select (ne ow 0u32) (sub g base) 0u32))
  (let cb (add sb (mul c ${CHUNK}u32)))
  (let ce (select (lt (sub se cb) ${CHUNK}u32) se (add cb ${CHUNK}u32)))
  (let t0 (add cb (mul l ${IT}u32)))
  (let s_acc $ID)
  (for @k 0u32 ${IT}u32 1u32
    (let @ii (add t0 @k))
    (if (land (ne ow 0u32) (lt @ii ce)) (then (set s_acc ($OP s_acc (load values @ii))))))
  (let s_w (subgroup_scan $OP s_acc))
  (if (eq lane ${WARP_M1}u32) (then (store ws w s_w)))]])

-- Binds $OUT = (left fold of the warp totals $ARR[0 .. w-1] from $ID) op $W: the warps
-- below l's, in order (an unrolled select per warp but the last, which is never below).
local WARP_PREFIX = (function()
  local L = { "  (let @p $ID)" }
  for z = 0, G.WARPS - 2 do
    L[#L + 1] = ("  (set @p (select (gt w %du32) ($OP @p (load $ARR %du32)) @p))"):format(z, z)
  end
  L[#L + 1] = "  (let $OUT ($OP @p $W))"
  return T.new("warpprefix", table.concat(L, "\n"))
end)()

local function warp_prefix(out, arr, w, op, id)
  return WARP_PREFIX({ OUT = out, ARR = arr, W = w, OP = op, ID = id })
end

local PART = T.new("segscanpart", [[
(program lib_segscan_part_$T_$OP (workgroup $WG)
  (buffer values $T read)
  (buffer offsets u32 read)
  (buffer meta u32 read)
  (buffer lng u32 read)
  (buffer lbase u32 read)
  (buffer lnch u32 read)
  (buffer pw $T write)
  (shared own u32 1)
  (shared ws $T $WARPS)
$OWNER
  (barrier)
$PREFIX
  (if (land (eq l ${WG_M1}u32) (ne ow 0u32)) (then (store pw g s_S))))
]])

local LONG = T.new("segscanlong", [[
(program lib_segscan_long_$T_$OP_$E (workgroup $WG)
  (buffer values $T read)
  (buffer offsets u32 read)
  (buffer dst $T write)
  (buffer meta u32 read)
  (buffer lng u32 read)
  (buffer lbase u32 read)
  (buffer lnch u32 read)
  (buffer pw $T read)
  (shared own u32 1)
  (shared ws $T $WARPS)
  (shared wc $T $WARPS)
  (shared sx $T $WG)
  (shared cc $T 1)
$OWNER
  (let cq (div (add c ${WG_M1}u32) ${WG}u32))
  (let cf (min (mul l cq) c))
  (let cl (min (add cf cq) c))
  (let c_acc $ID)
  (if (ne ow 0u32) (then (for @j cf cl 1u32 (set c_acc ($OP c_acc (load pw (add base @j)))))))
  (let c_w (subgroup_scan $OP c_acc))
  (if (eq lane ${WARP_M1}u32) (then (store wc w c_w)))
  (barrier)
$PREFIX
$CPREFIX
  (store sx l s_S)
  (if (eq l ${WG_M1}u32) (then (store cc 0u32 c_S)))
  (barrier)
  (let e_l (select (eq l 0u32) $ID (load sx (sub l 1u32))))
  (let acc ($OP (load cc 0u32) e_l))
  (for @kk 0u32 ${IT}u32 1u32
    (let i (add t0 @kk))
    (if (land (ne ow 0u32) (lt i ce))
      (then
        (let xi (load values i))
$STEP))))
]])

-- The shared prologue of the long launches for the current config.
local function owner(op, id)
  local cfg = M.config
  return OWNER({ CHUNK = cfg.CHUNK, IT = cfg.CHUNK // G.WG, ID = id, OP = op,
    SEGMENT = F.SEGMENT({ S = "sg", B = "sb", E = "se" }) })
end

local function part_text(t, op)
  local id = U.identity(op, t)
  return PART:render({ T = t, OP = op, OWNER = owner(op, id),
    PREFIX = warp_prefix("s_S", "ws", "s_w", op, id) })
end

local function long_text(t, op, excl)
  local id = U.identity(op, t)
  return LONG:render({ T = t, OP = op, E = excl and "e" or "i", ID = id,
    IT = M.config.CHUNK // G.WG, OWNER = owner(op, id),
    PREFIX = warp_prefix("s_S", "ws", "s_w", op, id),
    CPREFIX = warp_prefix("c_S", "wc", "c_w", op, id),
    -- exclusive: the segment's first element gets the exclusive init
    STEP = F.scanstep(op, excl and ("(select (eq i sb) %s acc)"):format(scan.init(op, t, true))
      or nil) })
end

local function short_text(t, op, excl)
  local cfg = M.config
  return SHORT:render({ T = t, OP = op, E = excl and "e" or "i",
    SEGMENT = F.SEGMENT({ S = "s", B = "b", E = "e" }),
    REGISTER = F.REGISTER({ LONG = cfg.LONG, CHUNK = cfg.CHUNK, CHUNK_M1 = cfg.CHUNK - 1 }),
    FIRST = excl and scan.init(op, t, true) or "x0",
    STEP = F.scanstep(op, excl and "acc" or nil) })
end

M.short_text, M.part_text, M.long_text = short_text, part_text, long_text

local RESET = T.new("segscanreset", [[
(program lib_segscan_reset (workgroup 1)
  (buffer meta u32 read_write)
  (store meta 0u32 0u32)
  (store meta 1u32 0u32))
]])

--- Appends the launches of a segmented scan of nseg >= 1 segments of values into dst,
--- with scratch from S (a scratch object or the backend).
function M.scan_steps(be, S, values, offsets, dst, op, excl, nseg, steps)
  local t, nv = values.type, values.count
  local cfg = M.config
  assert(cfg.CHUNK % G.WG == 0 and cfg.CHUNK >= G.WG and cfg.LONG >= 1,
    "vyre.lib internal: segmented_scan_lb.config needs CHUNK a multiple of WG, LONG >= 1")
  local tag = ("%s:%s:%s:%d:%d"):format(t, op, tostring(excl), cfg.LONG, cfg.CHUNK)
  -- every long segment has more than LONG elements: enough slots when segments do not
  -- overlap (overlapping ones that get none are scanned by their invocation in launch 1)
  local cap = U.cdiv(nv, cfg.CHUNK) + nv // (cfg.LONG + 1) + 1
  if nv <= cfg.LONG then cap = 0 end -- no segment can be long: launch 1 alone
  local lists = math.max(1, math.min(nseg, nv // (cfg.LONG + 1)))
  local meta = U.scratch(S, "segscan_meta", "u32", 2)
  local lng = U.scratch(S, "segscan_lng", "u32", lists)
  local lbase = U.scratch(S, "segscan_lbase", "u32", lists)
  local lnch = U.scratch(S, "segscan_lnch", "u32", lists)
  local kr = U.kernel(be, "segscan_reset", function() return RESET:render() end)
  local ks = U.kernel(be, "segscan_short:" .. tag, function() return short_text(t, op, excl) end)
  steps[#steps + 1] = { kr, { meta = meta }, { grid = { 1 } } }
  steps[#steps + 1] = { ks, { values = values, offsets = offsets, dst = dst, meta = meta,
    lng = lng, lbase = lbase, lnch = lnch, nseg = nseg, cap = cap },
    { grid = { U.cdiv(nseg, U.WG) } } }
  if cap == 0 then return end
  local pw = U.scratch(S, "segscan_pw", t, cap)
  local kp = U.kernel(be, "segscan_part:" .. tag, function() return part_text(t, op) end)
  local kl = U.kernel(be, "segscan_long:" .. tag, function() return long_text(t, op, excl) end)
  local common = { values = values, offsets = offsets, meta = meta, lng = lng, lbase = lbase,
    lnch = lnch, pw = pw }
  steps[#steps + 1] = { kp, common, { grid = { cap } } }
  local la = {}
  for k, v in pairs(common) do la[k] = v end
  la.dst = dst
  steps[#steps + 1] = { kl, la, { grid = { cap } } }
end

return M
