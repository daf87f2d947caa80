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
--      ballots (one per digit bit), the highest such lane adds their number to the
--      warp's counter of the digit (a shared atomic), and each lane's rank is the old
--      value (shuffled from that lane) plus the number of its peers in lower lanes.
--      Keys (and values) go to their rank in a shared tile, sorted by digit, stably;
--   5. the tile is written out coalesced: element i of digit d goes to
--      (global start of d for this tile) + i - (start of d in the tile).
local U = require("vyre.lib.util")

local M = {}

local KEY_TYPES = { "u32", "i32", "f32", "u64", "i64", "f64" }
local VALUE_TYPES = { "u32", "i32", "f32" }
local WIDE = { u64 = true, i64 = true, f64 = true }

-- Keys per invocation per tile, by key width and payload (measured on an H100, docs/LIB.md):
-- bigger tiles spread the per-tile costs (shared-memory zero fill, tile number, look-back,
-- barriers) over more keys, until registers cut the workgroups per SM. items_of caps them
-- so the shared tiles and the 9 KiB of counters fit the 48 KiB a workgroup may use.
local ITEMS = { k32 = 32, kv32 = 18, k64 = 16, kv64 = 12 }

-- Internal tuning for device experiments: config.items overrides ITEMS (still capped).
M.config = { items = nil }

local function items_of(kt, vt)
  local bytes = (WIDE[kt] and 8 or 4) + (vt and 4 or 0)
  local fit = (49152 - 9252) // (256 * bytes)
  local default = ITEMS[(vt and "kv" or "k") .. (WIDE[kt] and "64" or "32")]
  return math.min(M.config.items or default, fit)
end

-- Text helpers ---------------------------------------------------------------------------

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

--- The order-preserving unsigned image of key expression k: (statements, expression).
--- f32/f64: the arithmetic shift of the sign gives all ones for negatives, so negatives
--- flip every bit and the rest only the sign bit.
local function image(kt, k, name)
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

--- Statements binding `d` (u32, 0..255) to the digit of key expression k at the shift
--- expression sh (u32 for 32-bit keys, u64 for 64-bit ones), using `tmp` for the image.
local function digit_lines(c, kt, k, d, tmp, sh)
  local s, img = image(kt, k, tmp)
  if s then c.add(s) end
  if WIDE[kt] then
    c.add("(let %s (cast u32 (and (shr %s %s) 255u64)))", d, img, sh)
  else
    c.add("(let %s (and (shr %s %s) 255u32))", d, img, sh)
  end
end

--- Lines binding `pre` to the sum of ws[0 .. w) (the totals of the lower warps).
local function lower_warps(c, pre)
  local terms = {}
  for z = 0, 6 do
    terms[#terms + 1] = ("(select (gt w %du32) (load ws %du32) 0u32)"):format(z, z)
  end
  local e = terms[1]
  for z = 2, #terms do e = ("(add %s %s)"):format(e, terms[z]) end
  c.add("(let %s %s)", pre, e)
end

-- The pass kernel ------------------------------------------------------------------------

-- The look-back words: st[tile * 256 + d] = (flag << 32) | count of digit d, with flag =
-- 2 * ep + inclusive (count of tiles 0..tile) or 2 * ep (this tile's count only). Each
-- pass has its own epoch ep >= 1, so words of an earlier pass or call, or of a new zeroed
-- buffer, read as not yet published.
local PUBLISH = [[
(let fl (select (eq tile 0u32) 1u32 0u32))
(atomic exchange st (add (mul tile 256u32) l) (or (shl (cast u64 (or (shl ep 1u32) fl)) 32u64)
  (cast u64 tot)))]]

-- Invocation l sums digit l over the tiles before this one, nearest first, until a word
-- holds an inclusive count. A word is read with a plain load first: a stale copy is harmless
-- (any published value of this epoch is a correct count, an aggregate only ends the walk
-- later), and a word that looks unpublished is read again with an atomic, which always sees
-- the latest value: spinning polls with atomics only, so it ends once the word is published.
-- Workgroups take tile numbers in the order they start (ctr), so every tile waited on
-- belongs to a workgroup that already runs: no assumption on the order workgroups run in
-- (on the reference backend, workgroups run one after another: the walk never waits).
local LOOKBACK = [[
(let ex 0u32)
(if (gt tile 0u32)
  (then
    (let kk (sub tile 1u32))
    (for it 0u32 4294967295u32 1u32
      (let wi (add (mul kk 256u32) l))
      (let wv (load st wi))
      (if (ne (shr (cast u32 (shr wv 32u64)) 1u32) ep)
        (then (let wa (atomic or st wi 0u64)) (set wv wa)))
      (let hi (cast u32 (shr wv 32u64)))
      (if (eq (shr hi 1u32) ep)
        (then
          (set ex (add ex (cast u32 wv)))
          (if (ne (and hi 1u32) 0u32) (then (break)))
          (set kk (sub kk 1u32)))))
    (atomic exchange st (add (mul tile 256u32) l) (or (shl (cast u64 (or (shl ep 1u32) 1u32))
      32u64) (cast u64 (add ex tot))))))
(store gb l (sub (add (load gof (add $GOF l)) ex) sx))]]

--- The statements of one tile (steps 1-5 above). In scope: l, lane, w, wofs, wq, ltm,
--- tile, base (the tile's first key), tn (its number of keys), ep. sh is the digit's shift
--- as a literal of the image type, gofs the literal offset of this pass's digit starts.
local function tile_body(c, kt, vt, m, sh, gofs)
  -- 1. load (warp-striped: round j of lane i is tile key wq + 32 j + i) and count
  for j = 0, m - 1 do
    c.add("(let q_%d (add (add wq %du32) lane))", j, 32 * j)
    c.add("(let ok_%d (lt q_%d tn))", j, j)
    c.add("(let k_%d (load kin (add base q_%d)))", j, j)
    if vt then c.add("(let v_%d (load vin (add base q_%d)))", j, j) end
  end
  for j = 0, m - 1 do
    digit_lines(c, kt, "k_" .. j, "da_" .. j, "ia_" .. j, sh)
    c.add("(atomic add wh (add wofs da_%d) (select ok_%d 1u32 0u32))", j, j)
  end
  c.add("(barrier)")
  -- 2. invocation l owns digit l: exclusive offsets over the warps, tile total, scan
  for z = 0, 7 do c.add("(let c_%d (load wh (add l %du32)))", z, 256 * z) end
  local sum = "c_0"
  for z = 1, 7 do sum = ("(add %s c_%d)"):format(sum, z) end
  c.add("(let tot %s)", sum)
  c.add(PUBLISH)
  c.add("(let inc (subgroup_scan add tot))")
  c.add("(if (eq lane 31u32) (then (store ws w inc)))")
  c.add("(barrier)")
  lower_warps(c, "wpre")
  c.add("(let sx (sub (add wpre inc) tot))")
  c.add("(let o_0 sx)")
  c.add("(store wh l o_0)")
  for z = 1, 7 do
    c.add("(let o_%d (add o_%d c_%d))", z, z - 1, z - 1)
    c.add("(store wh (add l %du32) o_%d)", 256 * z, z)
  end
  -- 3. where this tile's keys of digit l go: gb[l] + (index in the sorted tile)
  c.add(U.fill(LOOKBACK, { GOF = ("%du32"):format(gofs) }))
  c.add("(barrier)")
  -- 4. rank: peers by ballots, the highest peer bumps the warp's counter. Every lane adds
  -- (0 but for the highest peer), so no branch splits the rounds; the highest peer's old
  -- value does not depend on the order of the zeros. A slot past tn stores nowhere.
  for j = 0, m - 1 do
    digit_lines(c, kt, "k_" .. j, "db_" .. j, "ib_" .. j, sh)
    c.add("(let pm_%d (ballot ok_%d))", j, j)
    for b = 0, 7 do
      c.add("(let bt_%d_%d (ne (and db_%d %du32) 0u32))", j, b, j, 1 << b)
      c.add("(let bb_%d_%d (ballot bt_%d_%d))", j, b, j, b)
      c.add("(set pm_%d (and pm_%d (select bt_%d_%d bb_%d_%d (not bb_%d_%d))))",
        j, j, j, b, j, b, j, b)
    end
    c.add("(let ld_%d (sub 31u32 (clz pm_%d)))", j, j)
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
    c.add("(let i_%d (add l %du32))", j, 256 * j)
    c.add("(let x_%d (load tk i_%d))", j, j)
    local s, img = image(kt, "x_" .. j, "ic_" .. j)
    if s then c.add(s) end
    local d = WIDE[kt] and ("(cast u32 (and (shr %s %s) 255u64))"):format(img, sh)
      or ("(and (shr %s %s) 255u32)"):format(img, sh)
    c.add("(let p_%d (select (lt i_%d tn) (add (load gb %s) i_%d) 4294967295u32))", j, j, d, j)
    c.add("(store kout p_%d x_%d)", j, j)
    if vt then c.add("(store vout p_%d (load tv i_%d))", j, j) end
  end
end

local function pass_text(kt, vt, m, p)
  local tile = 256 * m
  local c = collector()
  c.add("(program lib_sort_%s_%s_%d_p%d (workgroup 256)", kt, vt or "none", m, p)
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
  c.add("(shared wh u32 2048)")
  c.add("(shared gb u32 256)")
  c.add("(shared ws u32 8)")
  c.add("(shared sid u32 1)")
  c.add("(param n u32)")
  c.add("(param ep u32)")
  c.add("(let l (lid x))")
  c.add("(let lane (and l 31u32))")
  c.add("(let w (shr l 5u32))")
  c.add("(let wofs (mul w 256u32))")
  c.add("(let wq (mul w %du32))", 32 * m)
  c.add("(let ltm (sub (shl 1u32 lane) 1u32))")
  -- the tile number: the order in which workgroups start (see LOOKBACK)
  c.add("(if (eq l 0u32) (then (let t0 (atomic add ctr %du32 1u32)) (store sid 0u32 t0)))", p)
  c.add("(barrier)")
  c.add("(let tile (load sid 0u32))")
  c.add("(let base (mul tile %du32))", tile)
  c.add("(let tn (min %du32 (sub n base)))", tile)
  tile_body(c, kt, vt, m, ("%d%s"):format(8 * p, WIDE[kt] and "u64" or "u32"), 256 * p)
  c.add(")")
  return c.text()
end

-- One kernel per pass: the digit's shift is a literal (no run-time shift masking).
local function pass_kernel(be, kt, vt, m, p)
  return U.kernel(be, ("sort_pass:%s:%s:%d:%d"):format(kt, vt or "none", m, p),
    function() return pass_text(kt, vt, m, p) end)
end

-- Histograms -----------------------------------------------------------------------------

--- Counts the digits of the workgroup's chunk of kin into the shared table cnt: np rows
--- of 256 counters, one per digit position (shifts 0, 8, ...), 8 loads in flight per
--- invocation; slots past the chunk add 0.
local function count_lines(c, kt, np)
  c.add("(let cbeg (mul g chunk))")
  c.add("(let cend (select (lt chunk (sub n cbeg)) (add cbeg chunk) n))")
  c.add("(for t cbeg cend 2048u32")
  for j = 0, 7 do
    c.add("  (let i_%d (add (add t %du32) l))", j, 256 * j)
    c.add("  (let k_%d (load kin i_%d))", j, j)
  end
  for j = 0, 7 do
    c.add("  (let ok_%d (select (lt i_%d cend) 1u32 0u32))", j, j)
    local s, img = image(kt, "k_" .. j, "im_" .. j)
    if s then c.add("  " .. s) end
    for p = 0, np - 1 do
      local d
      if WIDE[kt] then
        d = ("(cast u32 (and (shr %s %du64) 255u64))"):format(img, 8 * p)
      else
        d = ("(and (shr %s %du32) 255u32)"):format(img, 8 * p)
      end
      c.add("  (atomic add cnt (add %s %du32) ok_%d)", d, 256 * p, j)
    end
  end
  c.add("  )")
  c.add("(barrier)")
end

-- The digit counts of every pass at once (onesweep), added into gh with global atomics.
local function ghist_kernel(be, kt)
  local np = WIDE[kt] and 8 or 4
  return U.kernel(be, "sort_ghist:" .. kt, function()
    local c = collector()
    c.add("(program lib_sort_ghist_%s (workgroup 256)", kt)
    c.indent(2)
    c.add("(buffer kin %s read)", kt)
    c.add("(buffer gh u32 read_write)")
    c.add("(shared cnt u32 %d)", 256 * np)
    c.add("(param n u32)")
    c.add("(param chunk u32)")
    c.add("(let l (lid x))")
    c.add("(let g (wgid x))")
    count_lines(c, kt, np)
    c.add("(for e l %du32 256u32", 256 * np)
    c.add("  (let ce (load cnt e))")
    c.add("  (if (ne ce 0u32) (then (atomic add gh e ce)))))")
    return c.text()
  end)
end

local INIT = [[
(program lib_sort_init (workgroup 256)
  (buffer gh u32 write)
  (buffer ctr u32 write)
  (let l (lid x))
  (for e l (len gh) 256u32 (store gh e 0u32))
  (if (lt l (len ctr)) (then (store ctr l 0u32))))
]]

-- Exclusive scans of np rows of 256 digit counts (one workgroup): gof = where each
-- digit's keys start in the output of each pass.
local GSCAN = [[
(program lib_sort_gscan (workgroup 256)
  (buffer gh u32 read)
  (buffer gof u32 write)
  (shared ws u32 8)
  (param np u32)
  (let l (lid x))
  (let lane (and l 31u32))
  (let w (shr l 5u32))
  (for p 0u32 np 1u32
    (let v (load gh (add (mul p 256u32) l)))
    (let inc (subgroup_scan add v))
    (if (eq lane 31u32) (then (store ws w inc)))
    (barrier)
$PRE
    (store gof (add (mul p 256u32) l) (sub (add wpre inc) v))
    (barrier)))
]]

local function gscan_kernel(be)
  return U.kernel(be, "sort_gscan", function()
    local c = collector()
    c.indent(4)
    lower_warps(c, "wpre")
    return U.fill(GSCAN, { PRE = c.text() })
  end)
end

-- Epochs of the look-back words, per state buffer (a new buffer is zeroed: epoch 0 is
-- never used). Each pass takes a new epoch, so no pass or call ever reads another's words.
local epochs = setmetatable({}, { __mode = "k" })
local EPOCH_MAX = 0x7fffffff

local function take_epochs(st, count)
  local e = epochs[st] or 0
  if e + count > EPOCH_MAX then
    st:zero()
    e = 0
  end
  epochs[st] = e + count
  return e + 1
end

-- Arguments ------------------------------------------------------------------------------

local function scratch_of(name, be, opts, keys, values)
  local n = keys.count
  local sk, sv
  local s = opts.scratch
  if s ~= nil then
    if type(s) ~= "table" or U.is_buffer(s) then
      U.raise(name, "opts.scratch must be a table {keys = Buffer [, values = Buffer]}",
        "pass scratch buffers of the keys' (and values') type and length, or no scratch")
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
    sk = U.scratch(be, "sort_keys", keys.type, n)
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
      sv = U.scratch(be, "sort_values", values.type, n)
    end
  end
  return sk, sv
end

-- Launches -------------------------------------------------------------------------------

-- Appends the launches of a sort of n >= 2 keys: bufs = {keys, scratch keys, values,
-- scratch values}; the passes ping-pong between them and end in the callers' buffers.
local function sort_steps(be, kt, vt, m, n, bufs, steps)
  local np = WIDE[kt] and 8 or 4
  local ntiles = U.cdiv(n, 256 * m)
  local gh = U.scratch(be, "sort_gh", "u32", 2048)
  local gof = U.scratch(be, "sort_gof", "u32", 2048)
  local ctr = U.scratch(be, "sort_ctr", "u32", 8)
  local st = U.scratch(be, "sort_state", "u64", ntiles * 256)
  local ep = take_epochs(st, np)
  local chunk, G = U.chunks(n)
  steps[#steps + 1] = { U.kernel(be, "sort_init", function() return INIT end),
    { gh = gh, ctr = ctr }, { grid = { 1 } } }
  steps[#steps + 1] = { ghist_kernel(be, kt), { kin = bufs[1], gh = gh, n = n, chunk = chunk },
    { grid = { G } } }
  steps[#steps + 1] = { gscan_kernel(be), { gh = gh, gof = gof, np = np }, { grid = { 1 } } }
  for p = 0, np - 1 do
    local a = { kin = bufs[1], kout = bufs[2], gof = gof, ctr = ctr, st = st, n = n, ep = ep + p }
    if vt then a.vin, a.vout = bufs[3], bufs[4] end
    steps[#steps + 1] = { pass_kernel(be, kt, vt, m, p), a, { grid = { ntiles } } }
    bufs[1], bufs[2], bufs[3], bufs[4] = bufs[2], bufs[1], bufs[4], bufs[3]
  end
end

function M.sort(name, timed, be, keys, values, opts)
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
  opts = U.check_opts(name, opts, { "scratch" }, 4)
  local n = keys.count
  local sk, sv = scratch_of(name, be, opts, keys, values)
  if n <= 1 then
    return keys, U.no_time()
  end
  local kt, vt = keys.type, values and values.type
  local m = items_of(kt, vt)
  local steps = {}
  sort_steps(be, kt, vt, m, n, { keys, sk, values, sv }, steps)
  local _, timing = U.run(name, be, steps, nil, timed)
  return keys, timing
end

return M
