-- vyre.lib.sort — stable LSD radix sort, onesweep style, 8-bit digits (docs/LIB.md, "sort").
--
-- Keys are ordered by order-preserving unsigned images of their bits, computed on the
-- fly: u32/u64 as they are; i32/i64 with the sign bit flipped; f32/f64 with every bit
-- flipped when the sign bit is set, else the sign bit flipped (so -NaN < -inf < ... <
-- -0 < +0 < ... < +inf < +NaN). 32-bit keys take 4 passes, 64-bit keys 8 (even counts,
-- so the result ends in the caller's buffers).
--
-- One call is one sequence: zero the counters; one read of the keys counts the digits of
-- every pass (ghist); one workgroup scans them into each pass's digit starts (gscan);
-- then one launch per pass, a workgroup per tile of 256 * ITEMS keys (tile_body):
--   1. each warp loads its 32 * ITEMS keys round by round (coalesced) and counts their
--      digits into its own row of a shared 8 x 256 table (shared atomics);
--   2. invocation d (one per digit) turns column d into exclusive offsets over the
--      warps and publishes the tile's count of digit d; a workgroup scan of the 256
--      totals gives each digit's start in the tile;
--   3. decoupled look-back: invocation d sums the counts of digit d in earlier tiles
--      (their published words, stopping at an inclusive one) and publishes its own
--      inclusive count; the digit's global start for this tile follows;
--   4. ranking: per round, the lanes holding the same digit find each other with 8
--      ballots (one per digit bit; a match_any gives the same masks, but match.any.sync
--      made the whole sort 1.9x slower on an H100, bench/results/2026-11-26-h100-lib-2.md),
--      the highest such lane adds their number to the
--      warp's counter of the digit (a shared atomic), and each lane's rank is the old
--      value (shuffled from that lane) plus the number of its peers in lower lanes.
--      Keys (and values) go to their rank in a shared tile, sorted by digit, stably;
--   5. the tile is written out coalesced: element i of digit d goes to
--      (global start of d for this tile) + i - (start of d in the tile).
local U = require("vyre.lib.util")
local T = require("vyre.lib.template")
local G = require("vyre.lib.geometry")
local F = require("vyre.lib.fragments")
local basic = require("vyre.lib.basic")

local M = {}

local KEY_TYPES = { "u32", "i32", "f32", "u64", "i64", "f64" }
local VALUE_TYPES = { "u32", "i32", "f32", "u64", "i64", "f64" }
local WIDE = F.WIDE

-- Keys per invocation per tile, by key width and payload (vyre.lib.geometry's SORT_*,
-- measured on an H100, docs/LIB.md): bigger tiles spread the per-tile costs (shared-memory
-- zero fill, tile number, look-back, barriers) over more keys, until registers cut the
-- workgroups per SM. items_of caps them so the shared tiles and the counters fit the
-- shared memory a workgroup may use.
local ITEMS = { k32 = G.SORT_K32, kv32 = G.SORT_KV32, k64 = G.SORT_K64, kv64 = G.SORT_KV64 }

-- The bytes of a pass kernel's shared counters: wh, gb, ws and sid (pass_template).
local COUNTER_BYTES = 4 * (G.SORT_WH + G.RADIX + G.WARPS + 1)

-- Internal tuning for device experiments: config.items overrides ITEMS (still capped).
M.config = { items = nil }

local function items_of(kt, vt)
  local bytes = (WIDE[kt] and 8 or 4) + (vt and (WIDE[vt] and 8 or 4) or 0)
  local fit = (G.SHARED_BYTES - COUNTER_BYTES) // (G.WG * bytes)
  local default = ITEMS[(vt and "kv" or "k") .. (WIDE[kt] and "64" or "32")]
  return math.min(M.config.items or default, fit)
end

-- Template text -------------------------------------------------------------------------
-- A pass kernel unrolls its keys per invocation and the histogram its digit positions, so
-- their template text is written for each shape once (cached) and goes through T.new like
-- any other; what varies within a shape (the pass, its shift) is a parameter.

--- A line collector: add(fmt, ...) appends fmt:format(...) indented by `pad` spaces.
local function collector()
  local lines = {}
  local pad = ""
  local c = {}
  function c.add(fmt, ...)
    lines[#lines + 1] = pad .. (select("#", ...) > 0 and fmt:format(...) or fmt)
  end
  function c.indent(n) pad = string.rep(" ", n) end
  function c.text() return table.concat(lines, "\n") end
  return c
end

local templates = {} -- shape key -> template (the text of a shape is built once)

local function cached(name, key, build)
  local t = templates[key]
  if not t then
    t = T.new(name, build())
    templates[key] = t
  end
  return t
end

--- The order-preserving unsigned image of key expression k: (statements, expression).
--- f32/f64: the arithmetic shift of the sign gives all ones for negatives, so negatives
--- flip every bit and the rest only the sign bit.
local function base_image(kt, k, name)
  if kt == "u32" or kt == "u64" then return nil, k end
  local s
  if kt == "i32" then
    s = ("(let %s (xor (bitcast u32 %s) 2147483648u32))"):format(name, k)
  elseif kt == "i64" then
    s = ("(let %s (xor (bitcast u64 %s) 9223372036854775808u64))"):format(name, k)
  elseif kt == "f32" then
    s = ("(let %s (xor (bitcast u32 %s) (or (bitcast u32 (shr (bitcast i32 %s) 31i32)) "
      .. "2147483648u32)))"):format(name, k, k)
  else
    s = ("(let %s (xor (bitcast u64 %s) (or (bitcast u64 (shr (bitcast i64 %s) 63i64)) "
      .. "9223372036854775808u64)))"):format(name, k, k)
  end
  return s, name
end

--- The image the sort orders by, under the options o (o.order, o.lo, o.hi; nil: the
--- default), as template text binding `name` (a template local, @...): "numpy" maps -0
--- to +0 before the image and every NaN to the largest image (all ones), so NaNs sort
--- last in input order; bits {lo, hi} keep image bits lo..hi-1, moved down to bit 0 (the
--- passes then cover only those bits). Returns (statements or nil, expression).
local function image(kt, k, name, o)
  if o.tag == "" then return base_image(kt, k, name) end
  local L, src = {}, k
  local w = WIDE[kt] and 64 or 32
  local it = WIDE[kt] and "u64" or "u32"
  local numpy = o.order == "numpy" and U.is_float(kt)
  if numpy then
    L[#L + 1] = ("(let %s_z (select (eq %s %s) %s %s))"):format(name, k, U.zero(kt),
      U.zero(kt), k)
    src = name .. "_z"
  end
  local s, img = base_image(kt, src, name .. "_b")
  if s then L[#L + 1] = s end
  if numpy then
    img = ("(select (ne %s %s) %s %s)"):format(k, k, U.INT[it].max, img)
  end
  if o.lo > 0 then img = ("(shr %s %d%s)"):format(img, o.lo, it) end
  if o.hi - o.lo < w then
    img = ("(and %s %d%s)"):format(img, (1 << (o.hi - o.lo)) - 1, it)
  end
  L[#L + 1] = ("(let %s %s)"):format(name, img)
  return table.concat(L, "\n"), name
end

--- The digit (u32, 0 .. RADIX-1) of image expression img at the shift expression sh (u32
--- for 32-bit keys, u64 for 64-bit ones).
local function digit(kt, img, sh)
  if WIDE[kt] then return ("(cast u32 (and (shr %s %s) ${RADIX_M1}u64))"):format(img, sh) end
  return ("(and (shr %s %s) ${RADIX_M1}u32)"):format(img, sh)
end

--- Lines binding `d` to the digit of key expression k at shift sh, using `tmp` (a local)
--- for the image.
local function digit_lines(c, kt, k, d, tmp, sh, o)
  local s, img = image(kt, k, tmp, o)
  if s then c.add(s) end
  c.add("(let %s %s)", d, digit(kt, img, sh))
end

--- lowerwarps: binds $OUT to the sum of ws[0 .. w) (the totals of the warps below l's;
--- the last warp is never below).
local LOWER_WARPS = (function()
  local e = "(select (gt w 0u32) (load ws 0u32) 0u32)"
  for z = 1, G.WARPS - 2 do
    e = ("(add %s (select (gt w %du32) (load ws %du32) 0u32))"):format(e, z, z)
  end
  return T.new("lowerwarps", "(let $OUT " .. e .. ")")
end)()

-- The pass kernel ------------------------------------------------------------------------

-- The look-back words: st[tile * RADIX + d] = (flag << 32) | count of digit d, with flag =
-- 2 * ep + inclusive (count of tiles 0..tile) or 2 * ep (this tile's count only). Each
-- pass has its own epoch ep >= 1, so words of an earlier pass or call, or of a new zeroed
-- buffer, read as not yet published.
local PUBLISH = T.new("sortpublish", [[
(let fl (select (eq tile 0u32) 1u32 0u32))
(atomic exchange st (add (mul tile ${RADIX}u32) l) $WORD)]])

-- Invocation l sums digit l over the tiles before this one, nearest first, until a word
-- holds an inclusive count. A word is read with a plain load first: a stale copy is harmless
-- (any published value of this epoch is a correct count, an aggregate only ends the walk
-- later), and a word that looks unpublished is read again with an atomic, which always sees
-- the latest value: spinning polls with atomics only, so it ends once the word is published.
-- Workgroups take tile numbers in the order they start (ctr), so every tile waited on
-- belongs to a workgroup that already runs: no assumption on the order workgroups run in
-- (on the reference backend, workgroups run one after another: the walk never waits).
-- Binds ex and stores gb[l], the global start of digit l for this tile minus its start
-- in the tile (gof + $GOF: this pass's digit starts).
local LOOKBACK = T.new("sortlookback", [[
(let ex 0u32)
(if (gt tile 0u32)
  (then
    (let @kk (sub tile 1u32))
    (for @it 0u32 4294967295u32 1u32
      (let @wi (add (mul @kk ${RADIX}u32) l))
      (let @wv (load st @wi))
      (if (ne (shr (cast u32 (shr @wv 32u64)) 1u32) ep)
        (then (let @wa (atomic or st @wi 0u64)) (set @wv @wa)))
      (let @hi (cast u32 (shr @wv 32u64)))
      (if (eq (shr @hi 1u32) ep)
        (then
          (set ex (add ex (cast u32 @wv)))
          (if (ne (and @hi 1u32) 0u32) (then (break)))
          (set @kk (sub @kk 1u32)))))
    (atomic exchange st (add (mul tile ${RADIX}u32) l) $WORD)))
(store gb l (sub (add (load gof (add $GOF l)) ex) sx))]])

--- The template text of one tile (steps 1-5 above) for m keys per invocation. In scope:
--- l, lane, w, wofs, wq, ltm, tile, base (the tile's first key), tn (its number of keys),
--- ep. $SH is the digit's shift as a literal of the image type; $PUBLISH and $LOOKBACK
--- the instances above.
local function tile_body(c, kt, vt, m, o)
  -- 1. load (warp-striped: round j of lane i is tile key wq + WARP j + i) and count
  for j = 0, m - 1 do
    c.add("(let q_%d (add (add wq %du32) lane))", j, G.WARP * j)
    c.add("(let ok_%d (lt q_%d tn))", j, j)
    c.add("(let k_%d (load kin (add base q_%d)))", j, j)
    if vt then c.add("(let v_%d (load vin (add base q_%d)))", j, j) end
  end
  for j = 0, m - 1 do
    digit_lines(c, kt, "k_" .. j, "da_" .. j, "@ia_" .. j, "$SH", o)
    c.add("(atomic add wh (add wofs da_%d) (select ok_%d 1u32 0u32))", j, j)
  end
  c.add("(barrier)")
  -- 2. invocation l owns digit l: exclusive offsets over the warps, tile total, scan
  for z = 0, G.WARPS - 1 do c.add("(let c_%d (load wh (add l %du32)))", z, G.RADIX * z) end
  local sum = "c_0"
  for z = 1, G.WARPS - 1 do sum = ("(add %s c_%d)"):format(sum, z) end
  c.add("(let tot %s)", sum)
  c.add("$PUBLISH")
  c.add("(let inc (subgroup_scan add tot))")
  c.add("(if (eq lane ${WARP_M1}u32) (then (store ws w inc)))")
  c.add("(barrier)")
  c.add("$WPRE")
  c.add("(let sx (sub (add wpre inc) tot))")
  c.add("(let o_0 sx)")
  c.add("(store wh l o_0)")
  for z = 1, G.WARPS - 1 do
    c.add("(let o_%d (add o_%d c_%d))", z, z - 1, z - 1)
    c.add("(store wh (add l %du32) o_%d)", G.RADIX * z, z)
  end
  -- 3. where this tile's keys of digit l go: gb[l] + (index in the sorted tile)
  c.add("$LOOKBACK")
  c.add("(barrier)")
  -- 4. rank: peers by ballots (one per digit bit) within the lanes holding a key (ballot
  -- ok), the highest peer bumps the warp's counter. Every lane adds
  -- (0 but for the highest peer), so no branch splits the rounds; the highest peer's old
  -- value does not depend on the order of the zeros. A slot past tn stores nowhere.
  for j = 0, m - 1 do
    digit_lines(c, kt, "k_" .. j, "db_" .. j, "@ib_" .. j, "$SH", o)
    c.add("(let pm_%d (ballot ok_%d))", j, j)
    for b = 0, G.RADIX_BITS - 1 do
      c.add("(let bt_%d_%d (ne (and db_%d %du32) 0u32))", j, b, j, 1 << b)
      c.add("(let bb_%d_%d (ballot bt_%d_%d))", j, b, j, b)
      c.add("(set pm_%d (and pm_%d (select bt_%d_%d bb_%d_%d (not bb_%d_%d))))",
        j, j, j, b, j, b, j, b)
    end
    c.add("(let ld_%d (sub ${WARP_M1}u32 (clz pm_%d)))", j, j)
    c.add("(let a_%d (atomic add wh (add wofs db_%d) (select (eq lane ld_%d) (popcount pm_%d) "
      .. "0u32)))", j, j, j, j)
    c.add("(let r_%d (select ok_%d (add (shuffle a_%d ld_%d) (popcount (and pm_%d ltm))) "
      .. "4294967295u32))", j, j, j, j, j)
    c.add("(store tk r_%d k_%d)", j, j)
    if vt then c.add("(store tv r_%d v_%d)", j, j) end
  end
  c.add("(barrier)")
  -- 5. write out: consecutive invocations write consecutive keys of a digit run (a slot
  -- past tn stores to index 2^32 - 1, which no buffer has: dropped)
  for j = 0, m - 1 do
    c.add("(let i_%d (add l %du32))", j, G.WG * j)
    c.add("(let x_%d (load tk i_%d))", j, j)
    local s, img = image(kt, "x_" .. j, "@ic_" .. j, o)
    if s then c.add(s) end
    c.add("(let p_%d (select (lt i_%d tn) (add (load gb %s) i_%d) 4294967295u32))", j, j,
      digit(kt, img, "$SH"), j)
    c.add("(store kout p_%d x_%d)", j, j)
    if vt then c.add("(store vout p_%d (load tv i_%d))", j, j) end
  end
end

--- The pass kernel's template for key type kt, value type vt (or nil), m keys per
--- invocation and order o. Parameters: P (the pass), EPOFF (p + 1), NP (passes of the
--- call), SH (the digit's shift), the fragments, and the device count's $NDECL/$NLETS.
local function pass_template(kt, vt, m, o)
  return cached("sortpass", ("pass:%s:%s:%d%s"):format(kt, vt or "none", m, o.tag), function()
    local tile = G.WG * m
    local c = collector()
    c.add("(program lib_sort_%s_%s_%d_p$P%s (workgroup $WG)", kt, vt or "none", m, o.tag)
    c.indent(2)
    c.add("(buffer kin %s read)", kt)
    c.add("(buffer kout %s write)", kt)
    if vt then
      c.add("(buffer vin %s read)", vt)
      c.add("(buffer vout %s write)", vt)
    end
    c.add("(buffer gof u32 read)")
    c.add("(buffer ctr u32 read_write)")
    c.add("(buffer st u64 read_write)")
    c.add("(shared tk %s %d)", kt, tile)
    if vt then c.add("(shared tv %s %d)", vt, tile) end
    c.add("(shared wh u32 ${SORT_WH})")
    c.add("(shared gb u32 $RADIX)")
    c.add("(shared ws u32 $WARPS)")
    c.add("(shared sid u32 1)")
    c.indent(0) -- (these values are indented as the kernel's lines)
    c.add("$NDECL")
    c.add("$NLETS")
    c.indent(2)
    c.add("(let l (lid x))")
    -- this pass's epoch: lib_sort_init stored the last of this call's np epochs in st's
    -- last word
    c.add("(let ep (add (sub (cast u32 (load st (sub (len st) 1u32))) ${NP}u32) ${EPOFF}u32))")
    c.add("(let lane (and l ${WARP_M1}u32))")
    c.add("(let w (shr l ${WARP_LOG2}u32))")
    c.add("(let wofs (mul w ${RADIX}u32))")
    c.add("(let wq (mul w %du32))", G.WARP * m)
    c.add("(let ltm (sub (shl 1u32 lane) 1u32))")
    -- the tile number: the order in which workgroups start (see LOOKBACK)
    c.add("(if (eq l 0u32) (then (let @t0 (atomic add ctr ${P}u32 1u32)) (store sid 0u32 @t0)))")
    c.add("(barrier)")
    c.add("(let tile (load sid 0u32))")
    c.add("(let base (mul tile %du32))", tile)
    -- (a tile past the end, as under a device count, has no keys: it publishes zeros)
    c.add("(let tn (select (lt base n) (min %du32 (sub n base)) 0u32))", tile)
    tile_body(c, kt, vt, m, o)
    c.add(")")
    return c.text()
  end)
end

-- A look-back word of this pass: (flag << 32) | count.
local function word(flag, count) return F.word(("(or (shl ep 1u32) %s)"):format(flag), count) end

local function pass_text(kt, vt, m, p, o, np, dev)
  return pass_template(kt, vt, m, o):render(U.with_count({ P = p, EPOFF = p + 1, NP = np,
    SH = ("%d%s"):format(G.RADIX_BITS * p, WIDE[kt] and "u64" or "u32"),
    PUBLISH = PUBLISH({ WORD = word("fl", "tot") }),
    LOOKBACK = LOOKBACK({ GOF = ("%du32"):format(G.RADIX * p),
      WORD = word("1u32", "(add ex tot)") }),
    WPRE = LOWER_WARPS({ OUT = "wpre" }) }, dev))
end

-- The cache keys of the pass kernels, by their parts (nested tables, made once): an
-- e-graph iteration asks for ~25 pass kernels, and formatting each key was a visible
-- share of its host time.
local PASS_KEYS = {}
local function sub(t, k)
  local u = t[k]
  if not u then
    u = {}
    t[k] = u
  end
  return u
end
local function pass_key(kt, vt, m, p, np, tag)
  local t = sub(sub(sub(sub(sub(PASS_KEYS, kt), vt or "none"), m), np), tag)
  local key = t[p + 1]
  if not key then
    key = ("sort_pass:%s:%s:%d:%d:%d%s"):format(kt, vt or "none", m, p, np, tag)
    t[p + 1] = key
  end
  return key
end
local PASS_LETS = { "(let n n1)" }

-- One kernel per pass: the digit's shift is a literal (no run-time shift masking).
local function pass_kernel(be, kt, vt, m, p, o, np, count)
  return U.kernel_n(be, pass_key(kt, vt, m, p, np, o.tag),
    function(dev) return pass_text(kt, vt, m, p, o, np, dev) end, count, PASS_LETS)
end

-- Histograms -----------------------------------------------------------------------------

--- The digit counts of every pass at once (onesweep), added into gh with global atomics:
--- the workgroup's chunk of kin (F.CHUNK) counts into the shared table cnt, np rows of
--- RADIX counters (one per digit position: shifts 0, RADIX_BITS, ...), ITEMS loads in
--- flight per invocation; slots past the chunk add 0.
local function ghist_template(kt, np, o)
  return cached("sortghist", ("ghist:%s:%d%s"):format(kt, np, o.tag), function()
    local c = collector()
    c.add("(program lib_sort_ghist_%s%s (workgroup $WG)", kt, o.tag)
    c.indent(2)
    c.add("(buffer kin %s read)", kt)
    c.add("(buffer gh u32 read_write)")
    c.add("(shared cnt u32 %d)", G.RADIX * np)
    c.indent(0) -- (these values are indented as the kernel's lines)
    c.add("$NDECL")
    c.add("$NLETS")
    c.add("$CHUNK")
    c.indent(2)
    c.add("(for @t cbeg cend ${TILE}u32")
    for j = 0, G.ITEMS - 1 do
      c.add("  (let @i_%d (add (add @t %du32) l))", j, G.WG * j)
      c.add("  (let @k_%d (load kin @i_%d))", j, j)
    end
    for j = 0, G.ITEMS - 1 do
      c.add("  (let @ok_%d (select (lt @i_%d cend) 1u32 0u32))", j, j)
      local s, img = image(kt, "@k_" .. j, "@im_" .. j, o)
      if s then c.add("  " .. s) end
      for p = 0, np - 1 do
        local sh = ("%d%s"):format(G.RADIX_BITS * p, WIDE[kt] and "u64" or "u32")
        c.add("  (atomic add cnt (add %s %du32) @ok_%d)", digit(kt, img, sh), G.RADIX * p, j)
      end
    end
    c.add("  )")
    c.add("(barrier)")
    c.add("(for @e l %du32 ${WG}u32", G.RADIX * np)
    c.add("  (let @ce (load cnt @e))")
    c.add("  (if (ne @ce 0u32) (then (atomic add gh @e @ce)))))")
    return c.text()
  end)
end

local function ghist_kernel(be, kt, np, o, count)
  return U.kernel_n(be, ("sort_ghist:%s:%d%s"):format(kt, np, o.tag), function(dev)
    return ghist_template(kt, np, o):render(U.with_count({ CHUNK = F.CHUNK() }, dev,
      { chunk = true }))
  end, count, U.N_ELEMS)
end

-- Also takes the call's np epochs of the look-back words (see LOOKBACK) on the device, so
-- that a steps list replayed (be:graph, be:megakernel times) takes new ones each run: st's
-- last word holds the last epoch taken. Past EPOCHS the words are zeroed and epochs
-- start again at 1 (a zeroed word reads as unpublished).
local INIT = T.new("sortinit", [[
(program lib_sort_init (workgroup $WG)
  (buffer gh u32 write)
  (buffer ctr u32 write)
  (buffer st u64 read_write)
  (param np u32)
  (let l (lid x))
  (for @e l (len gh) ${WG}u32 (store gh @e 0u32))
  (if (lt l (len ctr)) (then (store ctr l 0u32)))
  (let last (sub (len st) 1u32))
  (let e0 (cast u32 (load st last)))
  (let wrap (gt e0 (sub ${EPOCHS}u32 np)))
  (barrier)
  (if wrap (then (for @i l last ${WG}u32 (store st @i 0u64))))
  (if (eq l 0u32) (then (store st last (cast u64 (select wrap np (add e0 np)))))))
]])

-- Exclusive scans of np rows of RADIX digit counts (one workgroup): gof = where each
-- digit's keys start in the output of each pass.
local GSCAN = T.new("sortgscan", [[
(program lib_sort_gscan (workgroup $WG)
  (buffer gh u32 read)
  (buffer gof u32 write)
  (shared ws u32 $WARPS)
  (param np u32)
  (let l (lid x))
  (let lane (and l ${WARP_M1}u32))
  (let w (shr l ${WARP_LOG2}u32))
  (for p 0u32 np 1u32
    (let v (load gh (add (mul p ${RADIX}u32) l)))
    (let inc (subgroup_scan add v))
    (if (eq lane ${WARP_M1}u32) (then (store ws w inc)))
    (barrier)
    $PRE
    (store gof (add (mul p ${RADIX}u32) l) (sub (add wpre inc) v))
    (barrier)))
]])

local function gscan_kernel(be)
  return U.kernel(be, "sort_gscan", function()
    return GSCAN:render({ PRE = LOWER_WARPS({ OUT = "wpre" }) })
  end)
end

-- Arguments ------------------------------------------------------------------------------

local BITS = { u32 = 32, i32 = 32, f32 = 32, u64 = 64, i64 = 64, f64 = 64 }
local MAX_PASSES = 64 // G.RADIX_BITS -- of a 64-bit key

--- Checks the order options (bits, order) for key type kt; returns o = {lo, hi, order,
--- tag} (tag "" for the default order over every bit) and np, the number of passes.
local function order_of(name, kt, opts)
  local w = BITS[kt]
  local lo, hi = 0, w
  if opts.bits ~= nil then
    local b = opts.bits
    if type(b) ~= "table" or U.mt_name(b) or math.type(b[1]) ~= "integer"
      or math.type(b[2]) ~= "integer" then
      U.raise(name, "opts.bits must be a table {lo, hi} of two integers",
        ("pass e.g. {bits = {0, 16}} (0 <= lo < hi <= %d for %s keys)"):format(w, kt))
    end
    lo, hi = b[1], b[2]
    if lo < 0 or hi > w or lo >= hi then
      U.raise(name, ("opts.bits = {%d, %d} is not a range of bits of a %s key"):format(lo, hi,
        kt), ("pass 0 <= lo < hi <= %d"):format(w))
    end
  end
  local order = opts.order
  if order ~= nil and order ~= "total" and order ~= "numpy" then
    U.raise(name, ("unknown opts.order '%s'"):format(tostring(order)),
      "use \"total\" (the default: -NaN first, -0 before +0) or \"numpy\" (NaN last, -0 = +0)")
  end
  if order == "numpy" and not U.is_float(kt) then
    U.raise(name, ("opts.order = \"numpy\" is for float keys, not %s"):format(kt),
      "leave order out for integer keys (their order is the numeric one)")
  end
  local o = { lo = lo, hi = hi, order = order or "total", tag = "" }
  if order == "numpy" then o.tag = o.tag .. "_np" end
  if lo ~= 0 or hi ~= w then o.tag = o.tag .. ("_b%d_%d"):format(lo, hi) end
  return o, (hi - lo + G.RADIX_BITS - 1) // G.RADIX_BITS
end

--- The ping-pong buffers: opts.scratch.keys/values (a table), else from scratch object S.
local function pingpong(name, be, S, s, keys, values)
  local n = keys.count
  local sk, sv
  if s ~= nil and not U.is_scratch(s) then
    if type(s) ~= "table" or U.is_buffer(s) then
      U.raise(name, "opts.scratch must be a table {keys = Buffer [, values = Buffer]} or a "
        .. "lib.scratch object", "pass scratch buffers of the keys' (and values') type and "
        .. "length, lib.scratch(be), or no scratch")
    end
    sk, sv = s.keys, s.values
  end
  if sk ~= nil then
    U.check_buffer(name, be, sk, "opts.scratch.keys", { keys.type })
    if sk.count < n then
      U.raise(name, "opts.scratch.keys must be another buffer with at least #keys elements",
        "allocate be:buffer(keys.type, #keys) once and pass it")
    end
    local fix = "allocate be:buffer(keys.type, #keys) once and pass it (not a view of keys "
      .. "or values)"
    U.check_disjoint(name, sk, "opts.scratch.keys", keys, "keys", fix)
    if values then U.check_disjoint(name, sk, "opts.scratch.keys", values, "values", fix) end
  else
    sk = U.scratch(S, "sort_keys", keys.type, n)
  end
  if values then
    if sv ~= nil then
      U.check_buffer(name, be, sv, "opts.scratch.values", { values.type })
      if sv.count < n then
        U.raise(name, "opts.scratch.values must be another buffer with at least #values "
          .. "elements", "allocate be:buffer(values.type, #values) once and pass it")
      end
      local fix = "allocate be:buffer(values.type, #values) once and pass it (not a view of "
        .. "keys, values or the scratch keys)"
      U.check_disjoint(name, sv, "opts.scratch.values", values, "values", fix)
      U.check_disjoint(name, sv, "opts.scratch.values", keys, "keys", fix)
      U.check_disjoint(name, sv, "opts.scratch.values", sk, "opts.scratch.keys", fix)
    else
      sv = U.scratch(S, "sort_values", values.type, n)
    end
  end
  return sk, sv
end

-- Launches -------------------------------------------------------------------------------

-- Appends the launches of a sort of n >= 2 keys: bufs = {keys, scratch keys, values,
-- scratch values}; the passes ping-pong between them; an odd number of passes (a bits
-- range) ends with a copy back into the callers' buffers.
local function sort_steps(be, S, kt, vt, m, n, bufs, o, np, steps, count)
  local function nargs(a)
    if count then a.n, a.chunk, a.ncount, a.ncap = nil, nil, count, n end
    return a
  end
  local ntiles = U.cdiv(n, G.WG * m)
  -- a row of digit counts (and starts) and a tile counter per pass, for the most passes
  local gh = U.scratch(S, "sort_gh", "u32", MAX_PASSES * G.RADIX)
  local gof = U.scratch(S, "sort_gof", "u32", MAX_PASSES * G.RADIX)
  local ctr = U.scratch(S, "sort_ctr", "u32", MAX_PASSES)
  -- one word per tile and digit, and the epoch word (INIT) last
  local st = U.scratch(S, "sort_state", "u64", ntiles * G.RADIX + 1)
  local chunk, ngroups = U.chunks(n)
  local keys, values = bufs[1], bufs[3]
  steps[#steps + 1] = { U.kernel(be, "sort_init", function() return INIT:render() end),
    { gh = gh, ctr = ctr, st = st, np = np }, U.grid(1) }
  steps[#steps + 1] = { ghist_kernel(be, kt, np, o, count),
    nargs({ kin = bufs[1], gh = gh, n = n, chunk = chunk }), U.grid(ngroups) }
  steps[#steps + 1] = { gscan_kernel(be), { gh = gh, gof = gof, np = np }, U.grid(1) }
  for p = 0, np - 1 do
    local a = nargs({ kin = bufs[1], kout = bufs[2], gof = gof, ctr = ctr, st = st, n = n })
    if vt then a.vin, a.vout = bufs[3], bufs[4] end
    steps[#steps + 1] = { pass_kernel(be, kt, vt, m, p, o, np, count), a, U.grid(ntiles) }
    bufs[1], bufs[2], bufs[3], bufs[4] = bufs[2], bufs[1], bufs[4], bufs[3]
  end
  if np % 2 == 1 then
    local copy = basic.steps_form("copy")
    for _, st2 in ipairs(copy("sort", be, bufs[1]:view(1, n), keys, { scratch = S,
      count = count })) do
      steps[#steps + 1] = st2
    end
    if vt then
      for _, st2 in ipairs(copy("sort", be, bufs[3]:view(1, n), values, { scratch = S,
        count = count })) do
        steps[#steps + 1] = st2
      end
    end
  end
end

--- Checks the arguments of sort / argsort; returns values, opts, o, np.
local function check(name, be, keys, values, opts, allowed)
  U.check_backend(name, be)
  U.check_buffer(name, be, keys, "argument 2 (keys)", KEY_TYPES)
  if values ~= nil and not U.is_buffer(values) and opts == nil then
    values, opts = nil, values -- lib.sort(be, keys, opts)
  end
  if values ~= nil then
    U.check_buffer(name, be, values, "argument 3 (values)", VALUE_TYPES)
    if values.count ~= keys.count then
      U.raise(name, ("keys has %d elements but values has %d"):format(keys.count,
        values.count), "pass one value per key")
    end
    U.check_disjoint(name, values, "values", keys, "keys",
      "pass a values buffer that shares no memory with keys (or none)")
  end
  opts = U.check_opts(name, opts, allowed, 4)
  local o, np = order_of(name, keys.type, opts)
  return values, opts, o, np
end

--- The steps of a sort of keys (and values) with scratch object S; empty for n <= 1.
local function build(name, be, S, keys, values, opts, o, np, count)
  local sk, sv = pingpong(name, be, S, opts.scratch, keys, values)
  local n = keys.count
  local steps = {}
  if n <= 1 then return steps end
  local kt, vt = keys.type, values and values.type
  sort_steps(be, S, kt, vt, items_of(kt, vt), n, { keys, sk, values, sv }, o, np, steps,
    count)
  return steps
end

local OPTS = { "scratch", "bits", "order" }

function M.sort(name, timed, be, keys, values, opts)
  local o, np
  values, opts, o, np = check(name, be, keys, values, opts, OPTS)
  local S = U.is_scratch(opts.scratch) and U.scratch_of(name, be, opts.scratch)
    or U.default_scratch(be, "call")
  local steps = build(name, be, S, keys, values, opts, o, np)
  if #steps == 0 then return keys, U.no_time() end
  local _, timing = U.run(name, be, steps, nil, timed)
  return keys, timing
end

--- lib.steps.sort(be, keys [, values] [, {scratch, bits, order, count}]) -> steps
function M.steps_form(name, be, keys, values, opts)
  local o, np
  values, opts, o, np = check(name, be, keys, values, opts,
    { "scratch", "bits", "order", "count" })
  local outs = { { keys, "keys" } }
  if values then outs[2] = { values, "values" } end
  local count = U.check_count(name, be, opts.count, outs)
  local S = U.scratch_of(name, be, U.is_scratch(opts.scratch) and opts.scratch or nil)
  return build(name, be, S, keys, values, opts, o, np, count)
end

-- The default order of each key type (order_of of no options), made once: o is only read.
local DEFAULT_ORDER = setmetatable({}, { __index = function(t, kt)
  local o, np = order_of("steps.sort", kt, {})
  local v = { o = o, np = np }
  rawset(t, kt, v)
  return v
end })

--- lib.steps.sort(be, keys, values) in the default order for a caller inside vyre that
--- made keys and values itself (vyre.egraph's index and rebuild: live buffers of be, of a
--- key and a value type, one value per key, disjoint): the same steps as steps_form,
--- without its argument checks (a dozen Buffer field reads and two alias checks per sort,
--- ~4 sorts per e-graph iteration).
function M.steps_trusted(be, keys, values)
  local d = DEFAULT_ORDER[keys.type]
  return build("steps.sort", be, U.scratch_of("steps.sort", be, nil), keys, values, {}, d.o,
    d.np)
end

-- argsort: a copy of the keys sorted with iota positions as values.
local function argsort_build(name, be, S, keys, out, o, np, count)
  local n = keys.count
  if n == 0 then return {} end
  local steps = basic.steps_form("iota")(name, be, out:view(1, n), { scratch = S,
    count = count })
  if n == 1 then return steps end
  local kc = U.scratch(S, "argsort_keys", keys.type, n):view(1, n)
  for _, x in ipairs(basic.steps_form("copy")(name, be, keys, kc, { scratch = S,
    count = count })) do
    steps[#steps + 1] = x
  end
  for _, x in ipairs(build(name, be, S, kc, out:view(1, n), {}, o, np, count)) do
    steps[#steps + 1] = x
  end
  return steps
end

local function check_argsort(name, be, keys, opts, allowed)
  U.check_backend(name, be)
  U.check_buffer(name, be, keys, "argument 2 (keys)", KEY_TYPES)
  opts = U.check_opts(name, opts, allowed, 3)
  local o, np = order_of(name, keys.type, opts)
  if opts.scratch ~= nil and not U.is_scratch(opts.scratch) then
    U.raise(name, "opts.scratch must be a lib.scratch object", "pass lib.scratch(be) or nothing")
  end
  local out = opts.out
  if out ~= nil then
    U.check_buffer(name, be, out, "opts.out", { "u32" })
    if out.count < keys.count then
      U.raise(name, ("opts.out has %d elements, fewer than #keys = %d"):format(out.count,
        keys.count), "pass a u32 buffer of at least #keys elements")
    end
    U.check_disjoint(name, out, "opts.out", keys, "keys",
      "write the positions into a buffer of their own")
  end
  return opts, o, np
end

--- lib.argsort(be, keys [, {bits, order, out}]) -> u32 Buffer of source positions
function M.argsort(name, timed, be, keys, opts)
  local o, np
  opts, o, np = check_argsort(name, be, keys, opts, { "bits", "order", "out" })
  local out = opts.out or be:buffer("u32", math.max(keys.count, 0))
  local steps = argsort_build(name, be, U.default_scratch(be, "call"), keys, out, o, np)
  local _, timing = U.run(name, be, steps, nil, timed)
  return out, timing
end

--- lib.steps.argsort(be, keys, {out = u32 Buffer [, bits, order, scratch, count]})
function M.argsort_steps_form(name, be, keys, opts)
  local o, np
  opts, o, np = check_argsort(name, be, keys, opts,
    { "bits", "order", "out", "scratch", "count" })
  if opts.out == nil then
    U.raise(name, "opts.out is missing", "pass {out = be:buffer(\"u32\", #keys)}: steps "
      .. "allocate nothing")
  end
  local count = U.check_count(name, be, opts.count, { { opts.out, "opts.out" } })
  local S = U.scratch_of(name, be, opts.scratch)
  return argsort_build(name, be, S, keys, opts.out, o, np, count)
end

--- The unsigned image of a key (statements, expression), for vyre.group_lib's buckets.
M.key_image = base_image

return M
