-- vyre.lib.onepass_text — the kernels of the single-pass scans and compaction
-- (vyre.lib.scan_onepass, which launches them; docs/LIB.md "scan"), written with
-- vyre.lib.template. Their loops are unrolled by the elements per invocation (m) and the
-- look-back window, which the one-pass knobs set, so each template's text is written for
-- its shape (cached by shape) and then checked and rendered like any other: locals are
-- @names (hygienic), what a fragment gives its caller goes to names the caller passes.
-- Names every fragment may read from the kernel: l, lane, w (invocation, lane, warp),
-- tile, ep, atag, itag (after taketile), st, ctr, n and the shared arrays.
local U = require("vyre.lib.util")
local T = require("vyre.lib.template")
local G = require("vyre.lib.geometry")
local F = require("vyre.lib.fragments")

local P = {}

local WIDE = F.WIDE
P.WIDE = WIDE

-- Whether op on t gives the same bits in any association (integer add wraps; float
-- min/max with vyre's NaN rule are a semilattice): only float add needs the serial fold.
local function associative(op, t)
  return not (op == "add" and U.is_float(t))
end

-- Words per tile of the look-back state.
function P.nwords(t) return WIDE[t] and 4 or 2 end
local nwords = P.nwords

-- Template text ---------------------------------------------------------------------------

-- Lines of template text: add(fmt, ...) appends fmt:format(...) (fmt alone without
-- arguments); text() joins them.
local function lines()
  local L = {}
  local c = {}
  function c.add(fmt, ...)
    L[#L + 1] = select("#", ...) > 0 and fmt:format(...) or fmt
  end
  function c.text() return table.concat(L, "\n") end
  return c
end

-- The template `name` for shape key, its text written by build(c) (cached).
local shapes = {}
local function shaped(name, key, build)
  local k = name .. "|" .. key
  local tm = shapes[k]
  if not tm then
    local c = lines()
    build(c)
    tm = T.new(name, c.text())
    shapes[k] = tm
  end
  return tm
end

-- The padded shared index of index text e (one word skipped per 2^PAD_SHIFT).
local function pad(e) return ("(add %s (shr %s ${PAD_SHIFT}u32))"):format(e, e) end

local bits, decode, word, tag_of = F.bits, F.decode, F.word, F.tag_of

-- Fragments ---------------------------------------------------------------------------------

--- rgroup: reads the word group of tile index $IDX (an earlier tile), spinning until it
--- is published in this epoch, and binds $V (its value, type t) and $I (bool: the
--- inclusive prefix, else the aggregate). Each word is read with a plain load first; a
--- stale copy is harmless (every value a word takes in an epoch is correct, and an
--- aggregate only makes the walk go on), and words that look unpublished are read again
--- with atomics, which see the latest value, so a spin polls with atomics and ends once
--- the tile publishes. Tiles waited on belong to workgroups that took their numbers
--- earlier and so already run. lag > 0 (testing) ignores the inclusive words of the lag
--- tiles just before the reader's own.
local function read_group(t, lag, idx, v, i)
  return shaped("rgroup", t .. ":" .. lag, function(c)
    local nw = nwords(t)
    c.add("(let @b (mul $IDX %du32))", nw)
    for k = 0, nw - 1 do c.add("(let @w%d (load st (add @b %du32)))", k, k) end
    local half = nw // 2
    local function okterm(first, tag)
      local terms = {}
      for k = first, first + half - 1 do
        terms[#terms + 1] = ("(eq %s %s)"):format(tag_of("@w" .. k), tag)
      end
      return #terms == 1 and terms[1] or ("(land %s %s)"):format(terms[1], terms[2])
    end
    local oka = okterm(0, "atag")
    local oki = okterm(half, "itag")
    if lag > 0 then oki = ("(land %s (lt (add $IDX %du32) tile))"):format(oki, lag) end
    c.add("(for @it 0u32 4294967295u32 1u32")
    c.add("  (if (lor %s %s) (then (break)))", oki, oka)
    for k = 0, nw - 1 do
      c.add("  (let @a%d (atomic or st (add @b %du32) 0u64))", k, k)
      c.add("  (set @w%d @a%d)", k, k)
    end
    c.add("  )")
    c.add("(let $I %s)", oki)
    if WIDE[t] then
      c.add("(let $V (select $I %s %s))", decode(t, "@w2", "@w3"), decode(t, "@w0", "@w1"))
    else
      c.add("(let $V (select $I %s %s))", decode(t, "@w1"), decode(t, "@w0"))
    end
  end)({ IDX = idx, V = v, I = i })
end

--- publish: the aggregate word(s) of tile `tile` (at tile * nw), or its inclusive ones
--- (after them), set to value $V of type t.
local function publish(t, inclusive, v)
  return shaped("publish", t .. ":" .. tostring(inclusive), function(c)
    local nw = nwords(t)
    local first = inclusive and nw // 2 or 0
    local tag = inclusive and "itag" or "atag"
    c.add("(let @b %s)", bits(t, "$V"))
    if WIDE[t] then
      c.add("(atomic exchange st (add (mul tile %du32) %du32) %s)", nw, first,
        word(tag, "(cast u32 @b)"))
      c.add("(atomic exchange st (add (mul tile %du32) %du32) %s)", nw, first + 1,
        word(tag, "(cast u32 (shr @b 32u64))"))
    else
      c.add("(atomic exchange st (add (mul tile %du32) %du32) %s)", nw, first, word(tag, "@b"))
    end
  end)({ V = v })
end

--- tprefix: scans the values ${V}0 .. ${V}{m-1} held by each invocation (blocked:
--- invocation l holds elements l*m .. l*m+m-1 of the tile) under $OP; binds $AGG (the
--- tile's total, the same bits in every invocation) and $PRE (the invocation's exclusive
--- prefix within the tile: $ID for invocation 0). Ends after a barrier (wsum read).
--- Order: s = ((v_0 op v_1) op ...) op v_{m-1}; S = subgroup_scan(op, s) (Hillis-Steele);
--- W_w = S of the last lane of warp w; wp = left fold of W_0 .. W_{w-1} from the
--- identity; AGG = left fold of all W; PRE = wp op (S of lane - 1, identity for lane 0).
local function tile_prefix(m, o)
  return shaped("tprefix", tostring(m), function(c)
    c.add("(let @ts ${V}0)")
    for j = 1, m - 1 do c.add("(set @ts ($OP @ts ${V}%d))", j) end
    c.add("(let @tsc (subgroup_scan $OP @ts))")
    c.add("(let @tsu (shuffle_up @tsc 1u32))")
    c.add("(if (eq lane %du32) (then (store wsum w @tsc)))", G.WARP - 1)
    c.add("(barrier)")
    for z = 0, G.WARPS - 1 do c.add("(let @tw%d (load wsum %du32))", z, z) end
    c.add("(let @twp $ID)")
    for z = 0, G.WARPS - 2 do
      c.add("(set @twp (select (gt w %du32) ($OP @twp @tw%d) @twp))", z, z)
    end
    local agg = "@tw0"
    for z = 1, G.WARPS - 1 do agg = ("($OP %s @tw%d)"):format(agg, z) end
    c.add("(let $AGG %s)", agg)
    c.add("(let $PRE ($OP @twp (select (gt lane 0u32) @tsu $ID)))")
  end)({ V = o.v, OP = o.op, ID = o.id, AGG = o.agg, PRE = o.pre })
end

--- lookback: the look-back of tile `tile` (in scope: l, lane, w, tile, itag, atag),
--- binding the carry C_tile as $CARRY in every invocation (after a barrier). Invocation
--- l < window reads the words of tile tile - window + l; the invocation that reads tile
--- -1 (virtual) holds $INIT as an inclusive prefix. The nearest inclusive prefix in the
--- window (shared atomic max) starts the fold; when the window holds none, invocation 0
--- first walks below it (serially) to the carry of the window's first tile. Then: float
--- add folds the window serially in index order (invocation 0); the associative ops
--- reduce it with subgroup reductions (any order gives the same bits).
local function lookback(t, op, init, carry, cfg)
  local win, assoc = cfg.window, associative(op, t)
  local tm = shaped("lookback", ("%s:%d"):format(tostring(assoc), win), function(c)
    c.add("(let @lq (add tile l))")
    c.add("(let @lv $ID)")
    c.add("(let @li false)")
    c.add("(if (land (lt l %du32) (ge @lq %du32))", win, win)
    c.add("  (then")
    c.add("$RWIN")
    c.add("    (set @lv @rv)")
    c.add("    (set @li @ri)))")
    c.add("(if (eq @lq %du32) (then (set @lv $INIT) (set @li true)))", win - 1)
    c.add("(if @li (then (atomic max lbk 0u32 (add l 1u32))))")
    if not assoc then c.add("(if (lt l %du32) (then (store lbv l @lv)))", win) end
    c.add("(barrier)")
    c.add("(let @kk (load lbk 0u32))")
    -- the serial walk below the window (rare on the GPU; never on the in-order
    -- reference unless config.lag forces it): back to the nearest inclusive prefix (or
    -- tile -1, init), then forward, re-reading each word: an aggregate folds, an
    -- inclusive prefix replaces the running value, which it equals bit for bit.
    c.add("(let @fb $INIT)")
    c.add("(if (land (eq l 0u32) (eq @kk 0u32))")
    c.add("  (then")
    c.add("    (let @wk (sub tile %du32))", win)
    c.add("    (let @wj @wk)")
    c.add("    (for @wit 0u32 4294967295u32 1u32")
    c.add("      (if (eq @wj 0u32) (then (break)))")
    c.add("      (set @wj (sub @wj 1u32))")
    c.add("$RBACK")
    c.add("      (if @bi (then (set @fb @bv) (set @wj (add @wj 1u32)) (break))))")
    c.add("    (for @wf @wj @wk 1u32")
    c.add("$RFWD")
    c.add("      (set @fb (select @fi @fv ($OP @fb @fv))))))")
    c.add("(let @from (select (eq @kk 0u32) 0u32 (sub @kk 1u32)))")
    c.add("(let @cstart (select (eq @kk 0u32) @fb $ID))")
    if assoc then
      c.add("(let @lsel (select (ge l @from) @lv $ID))")
      c.add("(let @lred (subgroup_reduce $OP @lsel))")
      c.add("(if (eq lane 0u32) (then (store lbw w @lred)))")
      c.add("(barrier)")
      c.add("(if (eq l 0u32)")
      c.add("  (then")
      c.add("    (let @acc @cstart)")
      for z = 0, win // G.WARP - 1 do c.add("    (set @acc ($OP @acc (load lbw %du32)))", z) end
      c.add("    (store lbc 0u32 @acc)))")
    else
      c.add("(if (eq l 0u32)")
      c.add("  (then")
      c.add("    (let @acc @cstart)")
      c.add("    (for @fi8 (and @from 4294967288u32) %du32 8u32", win)
      for k = 0, 7 do c.add("      (let @fv%d (load lbv (add @fi8 %du32)))", k, k) end
      for k = 0, 7 do
        c.add("      (set @acc ($OP @acc (select (ge (add @fi8 %du32) @from) @fv%d $ID)))", k, k)
      end
      c.add("      )")
      c.add("    (store lbc 0u32 @acc)))")
    end
    c.add("(barrier)")
    c.add("(let $CARRY (load lbc 0u32))")
  end)
  return tm({ ID = U.identity(op, t), INIT = init, OP = op, CARRY = carry,
    RWIN = read_group(t, cfg.lag, ("(sub @lq %du32)"):format(win), "@rv", "@ri"),
    RBACK = read_group(t, cfg.lag, "@wj", "@bv", "@bi"),
    RFWD = read_group(t, cfg.lag, "@wf", "@fv", "@fi") })
end

--- taketile: invocation 0 takes the tile number and epoch and resets the window's
--- nearest-inclusive slot; binds tile, ep, atag and itag (the names every fragment reads)
--- in every invocation.
local TAKE_TILE = T.new("taketile", [[
(if (eq l 0u32)
  (then
    (let @t0 (atomic add ctr 0u32 1u32))
    (let @e0 (atomic or ctr 2u32 0u32))
    (store sid 0u32 @t0)
    (store sid 1u32 (add @e0 1u32))
    (store lbk 0u32 0u32)))
(barrier)
(let tile (load sid 0u32))
(let ep (load sid 1u32))
(let atag (shl ep 1u32))
(let itag (or atag 1u32))]])

--- finish: the last workgroup to finish resets the tile counter and the finish counter and
--- advances the epoch (over 1 .. EPOCHS: tags fit 32 bits, and a zeroed word, tag 0, is
--- never published): the next launch starts clean.
local FINISH = T.new("finish", [[
(if (eq l 0u32)
  (then
    (let @dn (atomic add ctr 1u32 1u32))
    (if (eq @dn (sub (ngroups x) 1u32))
      (then
        (atomic exchange ctr 0u32 0u32)
        (atomic exchange ctr 1u32 0u32)
        (atomic exchange ctr 2u32 (select (ge ep ${EPOCHS}u32) 0u32 ep))))))]])

--- lookdecls: the look-back's buffers and shared arrays (element type $T).
local LOOK_DECLS = T.new("lookdecls", [[
  (buffer st u64 read_write)
  (buffer ctr u32 read_write)
  (shared sid u32 2)
  (shared lbk u32 1)
  (shared lbc $T 1)
  (shared $ARR $T $SIZE)]])

local function look_decls(t, op, cfg)
  if associative(op, t) then
    return LOOK_DECLS({ T = t, ARR = "lbw", SIZE = cfg.window // G.WARP })
  end
  return LOOK_DECLS({ T = t, ARR = "lbv", SIZE = cfg.window })
end

-- Scan kernels ---------------------------------------------------------------------------

-- The count param and the names every fragment reads: l, lane (in its warp), w (warp).
local function prologue(c)
  c.add("  (param n u32)")
  c.add("(let l (lid x))")
  c.add("(let lane (and l %du32))", G.WARP - 1)
  c.add("(let w (shr l ${WARP_LOG2}u32))")
end

--- The value an exclusive scan starts from (as lib.scan: +0.0 for float add).
function P.scan_init(op, t, exclusive)
  if exclusive and op == "add" and U.is_float(t) then return U.zero(t) end
  return U.identity(op, t)
end

-- Lines of a tile's look-back, after its tile prefix (tagg): invocation 0 publishes the
-- aggregate ($PUBA), all look back for the carry ($LOOK), invocation 0 publishes the
-- inclusive prefix ci = carry op tagg ($PUBI).
local function look_lines(c, op)
  c.add("(if (eq l 0u32) (then")
  c.add("$PUBA")
  c.add("))")
  c.add("$LOOK")
  c.add("(if (eq l 0u32) (then")
  c.add("(let ci (%s carry tagg))", op)
  c.add("$PUBI")
  c.add("))")
end

-- Lines of one tile of the scan: load, tile prefix, [look-back], outputs, store. `carry`
-- must be bound before the outputs (the look-back binds it; the single-workgroup kernel
-- keeps it across tiles). Fragments go in as $TP, $PUBA, $LOOK, $PUBI.
local function scan_tile(c, t, op, m, exclusive, look)
  local tsize = G.WG * m
  c.add("(let base (mul tile %du32))", tsize)
  for j = 0, m - 1 do
    c.add("(let g_%d (add base %s))", j, j == 0 and "l" or ("(add l %du32)"):format(G.WG * j))
  end
  for j = 0, m - 1 do c.add("(let y_%d (select (lt g_%d n) (load src g_%d) $ID))", j, j, j) end
  for j = 0, m - 1 do c.add("(store sm %s y_%d)", pad(("(add l %du32)"):format(G.WG * j)), j) end
  c.add("(barrier)")
  c.add("(let own (mul l %du32))", m)
  for j = 0, m - 1 do c.add("(let x_%d (load sm %s))", j, pad(("(add own %du32)"):format(j))) end
  c.add("$TP")
  if look then look_lines(c, "$OP") end
  if U.is_float(t) and op ~= "add" then
    -- Float min/max: the identity is NaN, and min(NaN, NaN) is "a NaN" whose bits differ
    -- between the GPU (0x7fffffff) and the reference (the second operand), so the first
    -- invocation of tile 0, whose in-tile prefix is the identity, starts from the carry
    -- itself (the scan's init) on both backends instead of combining two NaNs
    -- (on the GPU the look-back's carry of tile 0 is itself such a NaN: take init's
    -- literal there)
    c.add("(let run (select (ne tpre tpre) (select (eq tile 0u32) $INIT carry) ($OP carry tpre)))")
  else
    c.add("(let run ($OP carry tpre))")
  end
  for j = 0, m - 1 do
    local at = pad(("(add own %du32)"):format(j))
    if exclusive then
      c.add("(store sm %s run)", at)
      c.add("(set run ($OP run x_%d))", j)
    else
      c.add("(set run ($OP run x_%d))", j)
      c.add("(store sm %s run)", at)
    end
  end
  c.add("(barrier)")
  for j = 0, m - 1 do
    c.add("(if (lt g_%d n) (then (store dst g_%d (load sm %s))))", j, j,
      pad(("(add l %du32)"):format(G.WG * j)))
  end
end

--- The text of a one-pass scan kernel (look) or of the single-workgroup scan, for the
--- one-pass config cfg (items m, window, lag).
function P.scan_text(t, op, exclusive, look, m, cfg)
  local tsize = G.WG * m
  local init = P.scan_init(op, t, exclusive)
  local c = lines()
  c.add("(program lib_scan1_$T_$OP_%s%s (workgroup $WG)", exclusive and "e" or "i",
    look and "l" or "s")
  c.add("  (buffer src $T read)")
  c.add("  (buffer dst $T write)")
  if look then c.add("$DECLS") end
  c.add("  (shared sm $T %d)", tsize + (tsize >> G.PAD_SHIFT))
  c.add("  (shared wsum $T %d)", G.WARPS)
  prologue(c)
  if look then
    c.add("$TAKE")
    scan_tile(c, t, op, m, exclusive, true)
    c.add("$FINISH")
  else
    -- one workgroup, every tile in order: the same chain of carries, no look-back
    c.add("(let carry $INIT)")
    c.add("(for tile 0u32 (div (add n %du32) %du32) 1u32", tsize - 1, tsize)
    scan_tile(c, t, op, m, exclusive, false)
    c.add("(set carry ($OP carry tagg))")
    c.add("(barrier))")
  end
  c.add(")")
  local args = { T = t, OP = op, ID = U.identity(op, t),
    TP = tile_prefix(m, { v = "x_", op = op, id = U.identity(op, t), agg = "tagg", pre = "tpre" }) }
  if U.is_float(t) and op ~= "add" or not look then args.INIT = init end
  if look then
    args.DECLS, args.TAKE, args.FINISH = look_decls(t, op, cfg), TAKE_TILE(), FINISH()
    args.PUBA, args.PUBI = publish(t, false, "tagg"), publish(t, true, "ci")
    args.LOOK = lookback(t, op, init, "carry", cfg)
  end
  return T.new("scanone", c.text()):render(args)
end

-- Compaction --------------------------------------------------------------------------

-- Lines of one tile of the compaction: the keep flags and elements go to shared memory
-- (coalesced, the predicate over x evaluated on the way), each invocation counts its m
-- flags, the tile prefix of the counts gives each kept element its rank in the tile,
-- [the look-back gives the count kept before the tile,] the kept elements are gathered
-- in order into the shared tile and written out contiguously.
local function compact_tile(c, m, look)
  local tsize = G.WG * m
  c.add("(let base (mul tile %du32))", tsize)
  c.add("(for j 0u32 %du32 1u32", m)
  c.add("  (let k (add l (mul j ${WG}u32)))")
  c.add("  (let gi (add base k))")
  c.add("  (let x (load src gi))")
  c.add("  (store sm %s x)", pad("k"))
  c.add("  (store fl %s (select (land (lt gi n) $KEEP) 1u32 0u32)))", pad("k"))
  c.add("(barrier)")
  c.add("(let own (mul l %du32))", m)
  for j = 0, m - 1 do
    c.add("(let x_%d (load sm %s))", j, pad(("(add own %du32)"):format(j)))
    c.add("(let f_%d (load fl %s))", j, pad(("(add own %du32)"):format(j)))
  end
  c.add("$TP")
  if look then look_lines(c, "add") end
  -- every invocation has read its elements (the tile prefix's barrier): sm is free
  c.add("(let rk tpre)")
  for j = 0, m - 1 do
    c.add("(if (ne f_%d 0u32) (then (store sm %s x_%d)))", j, pad("rk"), j)
    c.add("(set rk (add rk f_%d))", j)
  end
  c.add("(barrier)")
  for j = 0, m - 1 do
    c.add("(let o_%d (add l %du32))", j, G.WG * j)
    c.add("(if (lt o_%d tagg) (then (store dst (add carry o_%d) (load sm %s))))", j, j,
      pad("o_" .. j))
  end
end

--- The text of a compaction kernel of element type t by a flags buffer of type
--- flags_type or by predicate text over x (pred), one-pass (look) or single-workgroup.
function P.compact_text(t, flags_type, pred, look, m, cfg)
  local tsize = G.WG * m
  local c = lines()
  c.add("(program lib_compact1_$T_$KIND (workgroup $WG)")
  c.add("  (buffer src $T read)")
  if not pred then c.add("  (buffer flags $FT read)") end
  c.add("  (buffer dst $T write)")
  c.add("  (buffer total u32 write)")
  if look then c.add("$DECLS") end
  c.add("  (shared sm $T %d)", tsize + (tsize >> G.PAD_SHIFT))
  c.add("  (shared fl u32 %d)", tsize + (tsize >> G.PAD_SHIFT))
  c.add("  (shared wsum u32 %d)", G.WARPS)
  prologue(c)
  if look then
    c.add("$TAKE")
    compact_tile(c, m, true)
    c.add("(if (land (eq l 0u32) (eq tile (sub (ngroups x) 1u32)))")
    c.add("  (then (store total 0u32 (add carry tagg))))")
    c.add("$FINISH")
  else
    c.add("(let carry 0u32)")
    c.add("(for tile 0u32 (div (add n %du32) %du32) 1u32", tsize - 1, tsize)
    compact_tile(c, m, false)
    c.add("(set carry (add carry tagg))")
    c.add("(barrier))")
    c.add("(if (eq l 0u32) (then (store total 0u32 carry)))")
  end
  c.add(")")
  local keep = pred or require("vyre.lib.compact").keep_of_flags(flags_type)
  local args = { T = t, KEEP = keep, KIND = (pred and "pred" or flags_type)
    .. (look and "_l" or "_s"),
    TP = tile_prefix(m, { v = "f_", op = "add", id = "0u32", agg = "tagg", pre = "tpre" }) }
  if not pred then args.FT = flags_type end
  if look then
    args.DECLS, args.TAKE, args.FINISH = look_decls("u32", "add", cfg), TAKE_TILE(), FINISH()
    args.PUBA, args.PUBI = publish("u32", false, "tagg"), publish("u32", true, "ci")
    args.LOOK = lookback("u32", "add", "0u32", "carry", cfg)
  end
  return T.new("compactone", c.text()):render(args)
end

return P
