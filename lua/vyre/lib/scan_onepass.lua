-- vyre.lib.scan_onepass — single-pass scans and compaction by decoupled look-back, with a
-- float association that does not depend on timing (docs/LIB.md, "scan").
--
-- One launch, one workgroup per tile of 256 * ITEMS elements. A workgroup takes the next
-- tile number from an atomic counter (so every tile it waits on belongs to a workgroup
-- that already runs: no assumption on the order the GPU runs workgroups in), scans its
-- tile in shared memory and registers, publishes the tile's total (its aggregate), looks
-- back at the words of earlier tiles for its carry, publishes its inclusive prefix and
-- writes its outputs: the input is read once and the output written once (2n traffic).
--
-- The carry into tile t is the left fold C_t = ((init op a_0) op a_1) ... op a_{t-1} of
-- the tile aggregates a_k. The look-back finds the nearest tile k whose inclusive prefix
-- I_k = C_{k+1} is published and folds the aggregates of tiles k+1 .. t-1 onto it, in
-- index order: by induction every published I_k is that same left fold, so the carry has
-- the same bits wherever the walk stopped, on every run, device and backend.
--
-- The look-back words live in a u64 buffer, (tag << 32) | 32 bits of a value: per tile an
-- aggregate word A and an inclusive word I (32-bit types), or A_lo A_hi I_lo I_hi (64-bit
-- types). A word's tag is 2 * epoch (A) or 2 * epoch + 1 (I). Every launch takes a new
-- epoch from the counter buffer, and its last workgroup resets the tile counter and
-- advances the epoch for the next launch, so nothing is zeroed between calls, and a
-- recorded graph that replays the launch stays correct. A word whose tag is not this
-- launch's reads as unpublished.
local U = require("vyre.lib.util")

local M = {}

-- Tuning and testing knobs (internal; docs/LIB.md):
--   enabled  false: scan and compact take the reduce-then-scan path (bench comparison);
--   items    elements per invocation (nil: 16 for 8-, 16- and 32-bit types, 8 for 64-bit);
--   window   how many earlier tiles one look-back round reads at once (32..256, a
--            multiple of 32): one word group per invocation;
--   small    at most this many tiles are scanned by one workgroup, with no look-back;
--   lag      testing only: the look-back ignores the inclusive words of the `lag` tiles
--            just before its own, as if they were still running (forces longer walks and
--            the serial walk below the window on the in-order reference backend).
M.config = { enabled = true, items = nil, window = 256, small = 4, lag = 0 }

local WIDE = { u64 = true, i64 = true, f64 = true }

--- Elements per invocation for element type t.
function M.items(t)
  return M.config.items or (WIDE[t] and 8 or 16)
end

--- Elements per tile for element type t.
function M.tile(t)
  return U.WG * M.items(t)
end

-- Whether op on t gives the same bits in any association (integer add wraps; float
-- min/max with vyre's NaN rule are a semilattice): only float add needs the serial fold.
local function associative(op, t)
  return not (op == "add" and U.is_float(t))
end

-- Text helpers ---------------------------------------------------------------------------

--- A line collector: add(fmt, ...) appends fmt:format(...) (fmt alone without arguments).
local function collector()
  local lines = {}
  local c = {}
  function c.add(fmt, ...)
    lines[#lines + 1] = select("#", ...) > 0 and fmt:format(...) or fmt
  end
  function c.text() return table.concat(lines, "\n") end
  return c
end

local function pad(e) return U.pad(e) end

-- The bits of value expression v of type t as a u64 (64-bit types) or u32 expression.
local function bits(t, v)
  if t == "u32" or t == "u64" then return v end
  return ("(bitcast %s %s)"):format(WIDE[t] and "u64" or "u32", v)
end

-- A look-back word: (tag << 32) | half, both u32 expressions.
local function word(tag, half)
  return ("(or (shl (cast u64 %s) 32u64) (cast u64 %s))"):format(tag, half)
end

local function tag_of(w) return ("(cast u32 (shr %s 32u64))"):format(w) end

-- The value of type t held by the low halves of words lo (and hi for 64-bit types).
local function decode(t, lo, hi)
  if not WIDE[t] then
    local b = ("(cast u32 %s)"):format(lo)
    return t == "u32" and b or ("(bitcast %s %s)"):format(t, b)
  end
  local b = ("(or (shl %s 32u64) (and %s 4294967295u64))"):format(hi, lo)
  return t == "u64" and b or ("(bitcast %s %s)"):format(t, b)
end

-- Words per tile.
local function nwords(t) return WIDE[t] and 4 or 2 end

--- Statements that read the word group of tile index expression idx (u32, an earlier
--- tile), spinning until it is published in this epoch, and bind <p>v (its value, type t)
--- and <p>i (bool: the inclusive prefix, else the aggregate). Each word is read with a
--- plain load first; a stale copy is harmless (every value a word takes in an epoch is
--- correct, and an aggregate only makes the walk go on), and words that look
--- unpublished are read again with atomics, which see the latest value, so a spin polls
--- with atomics and ends once the tile publishes. Tiles waited on belong to workgroups
--- that took their numbers earlier and so already run.
local function read_group(c, t, idx, p)
  local nw = nwords(t)
  c.add("(let %sb (mul %s %du32))", p, idx, nw)
  for k = 0, nw - 1 do c.add("(let %sw%d (load st (add %sb %du32)))", p, k, p, k) end
  local half = nw // 2
  local function okterm(first, tag)
    local terms = {}
    for k = first, first + half - 1 do
      terms[#terms + 1] = ("(eq %s %s)"):format(tag_of(p .. "w" .. k), tag)
    end
    return #terms == 1 and terms[1] or ("(land %s %s)"):format(terms[1], terms[2])
  end
  local oka = okterm(0, "atag")
  local oki = okterm(half, "itag")
  if M.config.lag > 0 then
    oki = ("(land %s (lt (add %s %du32) tile))"):format(oki, idx, M.config.lag)
  end
  c.add("(for %sit 0u32 4294967295u32 1u32", p)
  c.add("  (if (lor %s %s) (then (break)))", oki, oka)
  for k = 0, nw - 1 do
    c.add("  (let %sa%d (atomic or st (add %sb %du32) 0u64))", p, k, p, k)
    c.add("  (set %sw%d %sa%d)", p, k, p, k)
  end
  c.add("  )")
  c.add("(let %si %s)", p, oki)
  if WIDE[t] then
    c.add("(let %sv (select %si %s %s))", p, p, decode(t, p .. "w2", p .. "w3"),
      decode(t, p .. "w0", p .. "w1"))
  else
    c.add("(let %sv (select %si %s %s))", p, p, decode(t, p .. "w1"), decode(t, p .. "w0"))
  end
end

-- Publishing: the A word(s) at tile * nw, the I word(s) after them.
local function publish_lines(c, t, v, inclusive, p)
  local nw = nwords(t)
  local first = inclusive and nw // 2 or 0
  local tag = inclusive and "itag" or "atag"
  c.add("(let %sb %s)", p, bits(t, v))
  if WIDE[t] then
    c.add("(atomic exchange st (add (mul tile %du32) %du32) %s)", nw, first,
      word(tag, ("(cast u32 %sb)"):format(p)))
    c.add("(atomic exchange st (add (mul tile %du32) %du32) %s)", nw, first + 1,
      word(tag, ("(cast u32 (shr %sb 32u64))"):format(p)))
  else
    c.add("(atomic exchange st (add (mul tile %du32) %du32) %s)", nw, first,
      word(tag, p .. "b"))
  end
end

-- The tile ------------------------------------------------------------------------------

--- Lines that scan the values <v>0 .. <v>{m-1} held by each invocation (blocked: invocation
--- l holds elements l*m .. l*m+m-1 of the tile) under op on type t. Binds tagg (the
--- tile's total, the same bits in every invocation) and tpre (the invocation's exclusive
--- prefix within the tile: identity for invocation 0). Ends after a barrier (wsum read).
--- Order: s = ((v_0 op v_1) op ...) op v_{m-1}; S = subgroup_scan(op, s) (Hillis-Steele);
--- W_w = S of lane 31 of warp w; wp = left fold of W_0 .. W_{w-1} from the identity;
--- tagg = left fold of W_0 .. W_7; tpre = wp op (S of lane - 1, identity for lane 0).
local function tile_prefix(c, t, op, m, v)
  local id = U.identity(op, t)
  c.add("(let ts %s0)", v)
  for j = 1, m - 1 do c.add("(set ts (%s ts %s%d))", op, v, j) end
  c.add("(let tsc (subgroup_scan %s ts))", op)
  c.add("(let tsu (shuffle_up tsc 1u32))")
  c.add("(if (eq lane 31u32) (then (store wsum w tsc)))")
  c.add("(barrier)")
  for z = 0, 7 do c.add("(let tw_%d (load wsum %du32))", z, z) end
  c.add("(let twp %s)", id)
  for z = 0, 6 do c.add("(set twp (select (gt w %du32) (%s twp tw_%d) twp))", z, op, z) end
  local agg = "tw_0"
  for z = 1, 7 do agg = ("(%s %s tw_%d)"):format(op, agg, z) end
  c.add("(let tagg %s)", agg)
  c.add("(let tpre (%s twp (select (gt lane 0u32) tsu %s)))", op, id)
end

--- Lines of the look-back of tile `tile` (in scope: l, lane, w, tile, itag, atag, tagg),
--- ending with the carry C_tile in every invocation as `carry` (after a barrier).
--- Invocation l < WIN reads the words of tile tile - WIN + l; the invocation that
--- reads tile -1 (virtual) holds init as an inclusive prefix. The nearest inclusive
--- prefix in the window (shared atomic max) starts the fold; when the window holds
--- none, invocation 0 first walks below it (serially) to the carry of the window's first
--- tile. Then: float add folds the window serially in index order (invocation 0); the
--- associative ops reduce it with subgroup reductions (any order gives the same bits).
local function lookback(c, t, op, init)
  local id = U.identity(op, t)
  local win = M.config.window
  c.add("(let lq (add tile l))")
  c.add("(let lv %s)", id)
  c.add("(let li false)")
  c.add("(if (land (lt l %du32) (ge lq %du32))", win, win)
  c.add("  (then")
  read_group(c, t, ("(sub lq %du32)"):format(win), "r_")
  c.add("    (set lv r_v)")
  c.add("    (set li r_i)))")
  c.add("(if (eq lq %du32) (then (set lv %s) (set li true)))", win - 1, init)
  c.add("(if li (then (atomic max lbk 0u32 (add l 1u32))))")
  if not associative(op, t) then
    c.add("(if (lt l %du32) (then (store lbv l lv)))", win)
  end
  c.add("(barrier)")
  c.add("(let kk (load lbk 0u32))")
  -- the serial walk below the window (rare on the GPU; never on the in-order reference
  -- unless config.lag forces it): back to the nearest inclusive prefix (or tile -1,
  -- init), then forward, re-reading each word: an aggregate folds, an inclusive prefix
  -- replaces the running value, which it equals bit for bit.
  c.add("(let fb %s)", init)
  c.add("(if (land (eq l 0u32) (eq kk 0u32))")
  c.add("  (then")
  c.add("    (let wk (sub tile %du32))", win)
  c.add("    (let wj wk)")
  c.add("    (for wit 0u32 4294967295u32 1u32")
  c.add("      (if (eq wj 0u32) (then (break)))")
  c.add("      (set wj (sub wj 1u32))")
  read_group(c, t, "wj", "b_")
  c.add("      (if b_i (then (set fb b_v) (set wj (add wj 1u32)) (break))))")
  c.add("    (for wf wj wk 1u32")
  read_group(c, t, "wf", "f_")
  c.add("      (set fb (select f_i f_v (%s fb f_v))))))", op)
  c.add("(let from (select (eq kk 0u32) 0u32 (sub kk 1u32)))")
  c.add("(let cstart (select (eq kk 0u32) fb %s))", id)
  if associative(op, t) then
    c.add("(let lsel (select (ge l from) lv %s))", id)
    c.add("(let lred (subgroup_reduce %s lsel))", op)
    c.add("(if (eq lane 0u32) (then (store lbw w lred)))")
    c.add("(barrier)")
    c.add("(if (eq l 0u32)")
    c.add("  (then")
    c.add("    (let acc cstart)")
    for z = 0, win // 32 - 1 do c.add("    (set acc (%s acc (load lbw %du32)))", op, z) end
    c.add("    (store lbc 0u32 acc)))")
  else
    c.add("(if (eq l 0u32)")
    c.add("  (then")
    c.add("    (let acc cstart)")
    c.add("    (for fi (and from 4294967288u32) %du32 8u32", win)
    for k = 0, 7 do c.add("      (let fv_%d (load lbv (add fi %du32)))", k, k) end
    for k = 0, 7 do
      c.add("      (set acc (%s acc (select (ge (add fi %du32) from) fv_%d %s)))", op, k, k, id)
    end
    c.add("      )")
    c.add("    (store lbc 0u32 acc)))")
  end
  c.add("(barrier)")
  c.add("(let carry (load lbc 0u32))")
end

-- Lines taking the tile number and epoch (invocation 0) and resetting the window's
-- nearest-inclusive slot; ends with tile, ep, itag and atag bound in every invocation.
local function take_tile(c)
  c.add("(if (eq l 0u32)")
  c.add("  (then")
  c.add("    (let t0 (atomic add ctr 0u32 1u32))")
  c.add("    (let e0 (atomic or ctr 2u32 0u32))")
  c.add("    (store sid 0u32 t0)")
  c.add("    (store sid 1u32 (add e0 1u32))")
  c.add("    (store lbk 0u32 0u32)))")
  c.add("(barrier)")
  c.add("(let tile (load sid 0u32))")
  c.add("(let ep (load sid 1u32))")
  c.add("(let atag (shl ep 1u32))")
  c.add("(let itag (or atag 1u32))")
end

-- The epoch runs over 1 .. 2^31 - 1 (ctr[2] + 1), so tags fit 32 bits and a zeroed word
-- (tag 0) is never published. The last workgroup to finish resets the tile counter and
-- the finish counter and advances the epoch: the next launch starts clean.
local EPOCHS = 0x7fffffff

local function finish(c)
  c.add("(if (eq l 0u32)")
  c.add("  (then")
  c.add("    (let dn (atomic add ctr 1u32 1u32))")
  c.add("    (if (eq dn (sub (ngroups x) 1u32))")
  c.add("      (then")
  c.add("        (atomic exchange ctr 0u32 0u32)")
  c.add("        (atomic exchange ctr 1u32 0u32)")
  c.add("        (atomic exchange ctr 2u32 (select (ge ep %du32) 0u32 ep))))))", EPOCHS)
end

local function look_decls(c, t, op)
  c.add("  (buffer st u64 read_write)")
  c.add("  (buffer ctr u32 read_write)")
  c.add("  (shared sid u32 2)")
  c.add("  (shared lbk u32 1)")
  c.add("  (shared lbc %s 1)", t)
  if associative(op, t) then
    c.add("  (shared lbw %s %d)", t, M.config.window // 32)
  else
    c.add("  (shared lbv %s %d)", t, M.config.window)
  end
end

-- Scan kernels ---------------------------------------------------------------------------

--- The value an exclusive scan starts from (as lib.scan: +0.0 for float add).
local function scan_init(op, t, exclusive)
  if exclusive and op == "add" and U.is_float(t) then return U.zero(t) end
  return U.identity(op, t)
end
M.scan_init = scan_init

-- The body of one tile of the scan: load, tile prefix, [look-back], outputs, store.
-- `carry` must be bound before the outputs (the look-back binds it; the single-workgroup
-- kernel keeps it across tiles).
local function scan_tile(c, t, op, m, exclusive, look, init)
  local id = U.identity(op, t)
  local tsize = U.WG * m
  c.add("(let base (mul tile %du32))", tsize)
  for j = 0, m - 1 do
    c.add("(let g_%d (add base %s))", j, j == 0 and "l" or ("(add l %du32)"):format(256 * j))
  end
  for j = 0, m - 1 do
    c.add("(let y_%d (select (lt g_%d n) (load src g_%d) %s))", j, j, j, id)
  end
  for j = 0, m - 1 do
    c.add("(store sm %s y_%d)", pad(("(add l %du32)"):format(256 * j)), j)
  end
  c.add("(barrier)")
  c.add("(let own (mul l %du32))", m)
  for j = 0, m - 1 do
    c.add("(let x_%d (load sm %s))", j, pad(("(add own %du32)"):format(j)))
  end
  tile_prefix(c, t, op, m, "x_")
  if look then
    c.add("(if (eq l 0u32) (then")
    publish_lines(c, t, "tagg", false, "pa_")
    c.add("))")
    lookback(c, t, op, init)
    c.add("(if (eq l 0u32) (then")
    c.add("(let ci (%s carry tagg))", op)
    publish_lines(c, t, "ci", true, "pi_")
    c.add("))")
  end
  if U.is_float(t) and op ~= "add" then
    -- Float min/max: the identity is NaN, and min(NaN, NaN) is "a NaN" whose bits differ
    -- between the GPU (0x7fffffff) and the reference (the second operand), so the first
    -- invocation of tile 0, whose in-tile prefix is the identity, starts from the carry
    -- itself (the scan's init) on both backends instead of combining two NaNs
    -- (on the GPU the look-back's carry of tile 0 is itself such a NaN: take init's
    -- literal there)
    c.add("(let run (select (ne tpre tpre) (select (eq tile 0u32) %s carry) (%s carry tpre)))",
      init, op)
  else
    c.add("(let run (%s carry tpre))", op)
  end
  for j = 0, m - 1 do
    local at = pad(("(add own %du32)"):format(j))
    if exclusive then
      c.add("(store sm %s run)", at)
      c.add("(set run (%s run x_%d))", op, j)
    else
      c.add("(set run (%s run x_%d))", op, j)
      c.add("(store sm %s run)", at)
    end
  end
  c.add("(barrier)")
  for j = 0, m - 1 do
    c.add("(if (lt g_%d n) (then (store dst g_%d (load sm %s))))", j, j,
      pad(("(add l %du32)"):format(256 * j)))
  end
end

local function scan_text(t, op, exclusive, look)
  local m = M.items(t)
  local tsize = U.WG * m
  local init = scan_init(op, t, exclusive)
  local c = collector()
  c.add("(program lib_scan1_%s_%s_%s%s (workgroup 256)", t, op, exclusive and "e" or "i",
    look and "l" or "s")
  c.add("  (buffer src %s read)", t)
  c.add("  (buffer dst %s write)", t)
  if look then look_decls(c, t, op) end
  c.add("  (shared sm %s %d)", t, tsize + tsize // 32)
  c.add("  (shared wsum %s 8)", t)
  c.add("  (param n u32)")
  c.add("(let l (lid x))")
  c.add("(let lane (and l 31u32))")
  c.add("(let w (shr l 5u32))")
  if look then
    take_tile(c)
    scan_tile(c, t, op, m, exclusive, true, init)
    finish(c)
  else
    -- one workgroup, every tile in order: the same chain of carries, no look-back
    c.add("(let carry %s)", init)
    c.add("(for tile 0u32 (div (add n %du32) %du32) 1u32", tsize - 1, tsize)
    scan_tile(c, t, op, m, exclusive, false, init)
    c.add("(set carry (%s carry tagg))", op)
    c.add("(barrier))")
  end
  c.add(")")
  return c.text()
end

M.scan_text = scan_text

-- Scratch: the look-back words (nwords per tile) and the counters {tile, finished,
-- epoch}. Fresh buffers are zeroed: epoch 1 first, no word published. The words come in
-- power-of-two size classes, one scratch role each, because a steps list may hold several
-- scans (vyre.egraph builds such lists): growing one role would free a buffer that an
-- earlier step of the same list still uses.
local launches = setmetatable({}, { __mode = "k" }) -- ctr -> {n = launches, caps used}

local function state(be, t, ntiles)
  local need = ntiles * nwords(t)
  local cap = 1024
  while cap < need do cap = cap * 2 end
  local ctr = U.scratch(be, "scan1_ctr", "u32", 4)
  local rec = launches[ctr] or { n = 0, caps = {} }
  launches[ctr] = rec
  -- The device advances the epoch once per launch and wraps after 2^31 - 1 of them; a
  -- word left from a launch that long ago would then read as published, so every
  -- EPOCHS - 1 launches (plain calls; graph replays are not counted) all words and the
  -- counters are zeroed first.
  rec.n = rec.n + 1
  if rec.n >= EPOCHS - 1 then
    for c in pairs(rec.caps) do U.scratch(be, "scan1_state_" .. c, "u64", c):zero() end
    ctr:zero()
    rec.n = 1
  end
  rec.caps[cap] = true
  return U.scratch(be, "scan1_state_" .. cap, "u64", cap), ctr
end

--- The kernel of a one-pass scan (look = true) or of the single-workgroup scan.
function M.scan_kernel(be, t, op, exclusive, look)
  local cfg = M.config
  local key = ("scan1:%s:%s:%s:%s:%d:%d:%d"):format(t, op, tostring(exclusive),
    tostring(look), M.items(t), cfg.window, cfg.lag)
  return U.kernel(be, key, function() return scan_text(t, op, exclusive, look) end)
end

--- Appends the launch(es) that scan src[0..n) into dst[0..n) (n >= 1; dst may be src).
function M.scan_steps(be, t, op, exclusive, src, dst, n, steps)
  local ntiles = U.cdiv(n, M.tile(t))
  if ntiles <= M.config.small then
    steps[#steps + 1] = { M.scan_kernel(be, t, op, exclusive, false),
      { src = src, dst = dst, n = n }, { grid = { 1 } } }
    return
  end
  local st, ctr = state(be, t, ntiles)
  steps[#steps + 1] = { M.scan_kernel(be, t, op, exclusive, true),
    { src = src, dst = dst, st = st, ctr = ctr, n = n }, { grid = { ntiles } } }
end

-- Compaction --------------------------------------------------------------------------

-- The body of one tile of the compaction: the keep flags and elements go to shared
-- memory (coalesced, the predicate over x evaluated on the way), each invocation counts
-- its ITEMS flags, the tile prefix of the counts gives each kept element its rank in
-- the tile, [the look-back gives the count kept before the tile,] the kept elements are
-- gathered in order into the shared tile and written out contiguously.
local function compact_tile(c, m, keep, look)
  local tsize = U.WG * m
  c.add("(let base (mul tile %du32))", tsize)
  c.add("(for j 0u32 %du32 1u32", m)
  c.add("  (let k (add l (mul j 256u32)))")
  c.add("  (let gi (add base k))")
  c.add("  (let x (load src gi))")
  c.add("  (store sm %s x)", pad("k"))
  c.add("  (store fl %s (select (land (lt gi n) %s) 1u32 0u32)))", pad("k"), keep)
  c.add("(barrier)")
  c.add("(let own (mul l %du32))", m)
  for j = 0, m - 1 do
    c.add("(let x_%d (load sm %s))", j, pad(("(add own %du32)"):format(j)))
    c.add("(let f_%d (load fl %s))", j, pad(("(add own %du32)"):format(j)))
  end
  tile_prefix(c, "u32", "add", m, "f_")
  if look then
    c.add("(if (eq l 0u32) (then")
    publish_lines(c, "u32", "tagg", false, "pa_")
    c.add("))")
    lookback(c, "u32", "add", "0u32")
    c.add("(if (eq l 0u32) (then")
    c.add("(let ci (add carry tagg))")
    publish_lines(c, "u32", "ci", true, "pi_")
    c.add("))")
  end
  -- every invocation has read its elements (the tile prefix's barrier): sm is free
  c.add("(let rk tpre)")
  for j = 0, m - 1 do
    c.add("(if (ne f_%d 0u32) (then (store sm %s x_%d)))", j, pad("rk"), j)
    c.add("(set rk (add rk f_%d))", j)
  end
  c.add("(barrier)")
  for j = 0, m - 1 do
    c.add("(let o_%d (add l %du32))", j, 256 * j)
    c.add("(if (lt o_%d tagg) (then (store dst (add carry o_%d) (load sm %s))))", j, j,
      pad("o_" .. j))
  end
end

local function compact_text(t, flags_type, pred, look)
  local m = M.items(t)
  local tsize = U.WG * m
  local keep = pred
  if not pred then
    keep = flags_type == "bool" and "(load flags gi)"
      or ("(ne (load flags gi) 0%s)"):format(flags_type)
  end
  local c = collector()
  c.add("(program lib_compact1_%s_%s (workgroup 256)", t,
    (pred and "pred" or flags_type) .. (look and "_l" or "_s"))
  c.add("  (buffer src %s read)", t)
  if not pred then c.add("  (buffer flags %s read)", flags_type) end
  c.add("  (buffer dst %s write)", t)
  c.add("  (buffer total u32 write)")
  if look then look_decls(c, "u32", "add") end
  c.add("  (shared sm %s %d)", t, tsize + tsize // 32)
  c.add("  (shared fl u32 %d)", tsize + tsize // 32)
  c.add("  (shared wsum u32 8)")
  c.add("  (param n u32)")
  c.add("(let l (lid x))")
  c.add("(let lane (and l 31u32))")
  c.add("(let w (shr l 5u32))")
  if look then
    take_tile(c)
    compact_tile(c, m, keep, true)
    c.add("(if (land (eq l 0u32) (eq tile (sub (ngroups x) 1u32)))")
    c.add("  (then (store total 0u32 (add carry tagg))))")
    finish(c)
  else
    c.add("(let carry 0u32)")
    c.add("(for tile 0u32 (div (add n %du32) %du32) 1u32", tsize - 1, tsize)
    compact_tile(c, m, keep, false)
    c.add("(set carry (add carry tagg))")
    c.add("(barrier))")
    c.add("(if (eq l 0u32) (then (store total 0u32 carry)))")
  end
  c.add(")")
  return c.text()
end
M.compact_text = compact_text

--- The kernels of a compaction of element type t by a flags buffer of type flags_type or
--- by predicate text over x (nil flags_type): (one-pass, single-workgroup), compiled
--- through U.user_kernel so that a predicate that does not compile raises for name.
function M.compact_kernels(name, be, t, flags_type, pred)
  local cfg = M.config
  local key = ("compact1:%s:%s:%d:%d:%d"):format(t, pred and ("pred:" .. pred)
    or ("flags:" .. flags_type), M.items(t), cfg.window, cfg.lag)
  local fix = "write a bool expression over the element x, e.g. \"(gt x 0i32)\" for an i32 "
    .. "buffer (literals carry their type)"
  return U.user_kernel(name, be, key .. ":l", compact_text(t, flags_type, pred, true), fix),
    U.user_kernel(name, be, key .. ":s", compact_text(t, flags_type, pred, false), fix)
end

--- Appends the launch that compacts src[0..n) (n >= 1) into dst by flags (a Buffer) or
--- pred, writing the count to total[0].
function M.compact_steps(kernels, be, t, src, flags, dst, total, n, steps)
  local ntiles = U.cdiv(n, M.tile(t))
  local args = { src = src, flags = flags, dst = dst, total = total, n = n }
  if ntiles <= M.config.small then
    steps[#steps + 1] = { kernels[2], args, { grid = { 1 } } }
    return
  end
  args.st, args.ctr = state(be, "u32", ntiles)
  steps[#steps + 1] = { kernels[1], args, { grid = { ntiles } } }
end

--- lib.compact after its argument checks: compacts src by flags (a Buffer) or pred (text)
--- into dst; returns the count and the timing.
function M.compact(name, timed, be, src, flags, pred, dst)
  local t, n = src.type, src.count
  local k1, k2 = M.compact_kernels(name, be, t, flags and flags.type, pred)
  if n == 0 then return 0, U.no_time() end
  local total = U.scratch(be, "compact_total", "u32", 1)
  local steps = {}
  M.compact_steps({ k1, k2 }, be, t, src, flags, dst, total, n, steps)
  local out, timing = U.run(name, be, steps, { { total, 1, 1 } }, timed)
  return out[1][1], timing
end

return M
