-- vyre.lib.sort — stable LSD radix sort (docs/LIB.md, "sort").
--
-- 4-bit digits: 8 passes for 32-bit keys, 16 for 64-bit keys (an even number, so the
-- result ends in the caller's buffers). Keys are compared as order-preserving unsigned
-- images of their bits, computed on the fly: u32/u64 as they are; i32/i64 with the sign
-- bit flipped; f32/f64 with every bit flipped when the sign bit is set, else the sign
-- bit flipped (so -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN). Each pass:
--   1. hist: each workgroup counts the digits of its chunk -> hist[d * G + g];
--   2. an exclusive scan of hist (digit-major) gives each (digit, workgroup) its first
--      output position (one workgroup: 16 * G <= 16384 entries);
--   3. scatter: each workgroup walks its chunk tile by tile (2048 keys). Per tile, each
--      invocation counts the digits of its 8 consecutive keys in its own column of a
--      16 x 256 counter table, the table is scanned (block_scan), each key gets its
--      stable rank in the tile and is placed at it in shared memory, and the tile is
--      written out in that order to hist-offset + running per-digit base.
local U = require("vyre.lib.util")
local scan = require("vyre.lib.scan")

local M = {}

local KEY_TYPES = { "u32", "i32", "f32", "u64", "i64", "f64" }
local VALUE_TYPES = { "u32", "i32", "f32" }
local WIDE = { u64 = true, i64 = true, f64 = true }

--- Statements computing the digit d<sfx> (u32, 0..15) of key variable `key` of type kt at
--- the bit offset held in `shift` (u32) / `sh64` (u64).
local function digit(kt, key, sfx)
  local d = "d" .. sfx
  if kt == "u32" then
    return ("(let %s (and (shr %s shift) 15u32))"):format(d, key)
  elseif kt == "i32" then
    return ("(let %s (and (shr (xor (bitcast u32 %s) 2147483648u32) shift) 15u32))")
      :format(d, key)
  elseif kt == "f32" then
    return ("(let kb%s (bitcast u32 %s))\n(let %s (and (shr (xor kb%s (select (ne (shr kb%s "
      .. "31u32) 0u32) 4294967295u32 2147483648u32)) shift) 15u32))"):format(
      sfx, key, d, sfx, sfx)
  elseif kt == "u64" then
    return ("(let %s (cast u32 (and (shr %s sh64) 15u64)))"):format(d, key)
  elseif kt == "i64" then
    return ("(let %s (cast u32 (and (shr (xor (bitcast u64 %s) 9223372036854775808u64) sh64) "
      .. "15u64)))"):format(d, key)
  else
    return ("(let kb%s (bitcast u64 %s))\n(let %s (cast u32 (and (shr (xor kb%s (select "
      .. "(ne (shr kb%s 63u64) 0u64) 18446744073709551615u64 9223372036854775808u64)) "
      .. "sh64) 15u64)))"):format(sfx, key, d, sfx, sfx)
  end
end

local function indent(text, n)
  local pad = string.rep(" ", n)
  return pad .. text:gsub("\n", "\n" .. pad)
end

local HIST = [[
(program lib_sort_hist_$KT (workgroup 256)
  (buffer kin $KT read)
  (buffer hist u32 write)
  (shared cnt u32 4096)
  (shared sa u32 256)
  (param n u32)
  (param chunk u32)
  (param shift u32)
  (param ng u32)
  (let l (lid x))
  (let g (wgid x))
  (let sh64 (cast u64 shift))
  (let cbeg (mul g chunk))
  (let cend (select (lt chunk (sub n cbeg)) (add cbeg chunk) n))
  (for i (add cbeg l) cend 256u32
    (let key (load kin i))
$DIGIT
    (let ci (add (mul d_ 256u32) l))
    (store cnt ci (add (load cnt ci) 1u32)))
  (barrier)
  (let hrow (mul (shr l 4u32) 256u32))
  (let hcol (mul (and l 15u32) 16u32))
  (let hs 0u32)
  (for hi 0u32 16u32 1u32 (set hs (add hs (load cnt (add (add hrow hcol) hi)))))
  (store sa l hs)
  (barrier)
  (if (lt l 16u32)
    (then
      (let ht 0u32)
      (for hj 0u32 16u32 1u32 (set ht (add ht (load sa (add (mul l 16u32) hj)))))
      (store hist (add (mul l ng) g) ht))))
]]

local SCATTER = [[
(program lib_sort_scatter_$KT_$VT (workgroup 256)
  (buffer kin $KT read)
  (buffer kout $KT write)
$VDECL
  (buffer hist u32 read)
  (shared tk $KT 2112)
$VSHARED
  (shared cnt u32 4224)
  (shared sa u32 256)
  (shared sb u32 256)
  (shared dstart u32 17)
  (shared dbase u32 16)
  (param n u32)
  (param chunk u32)
  (param shift u32)
  (param ng u32)
  (let l (lid x))
  (let g (wgid x))
  (let sh64 (cast u64 shift))
  (let cbeg (mul g chunk))
  (let cend (select (lt chunk (sub n cbeg)) (add cbeg chunk) n))
  (let ntiles (div (add (sub cend cbeg) 2047u32) 2048u32))
  (if (lt l 16u32) (then (store dbase l (load hist (add (mul l ng) g)))))
  (for t 0u32 ntiles 1u32
    (let base (add cbeg (mul t 2048u32)))
    (let tn (min 2048u32 (sub cend base)))
    (for z 0u32 16u32 1u32
      (let zc (add (mul z 256u32) l))
      (store cnt (add zc (shr zc 5u32)) 0u32))
    (for j 0u32 8u32 1u32
      (let k (add (mul j 256u32) l))
      (let pk (add k (shr k 5u32)))
      (store tk pk (load kin (add base k)))
$VLOAD)
    (barrier)
$ITEMS
    (barrier)
$SCAN
    (if (lt l 16u32)
      (then
        (let ds (mul l 256u32))
        (store dstart l (load cnt (add ds (shr ds 5u32))))))
    (if (eq l 0u32) (then (store dstart 16u32 tn)))
    (barrier)
$RANKS
    (barrier)
    (for j3 0u32 8u32 1u32
      (let k3 (add (mul j3 256u32) l))
      (if (lt k3 tn)
        (then
          (let pk3 (add k3 (shr k3 5u32)))
          (let wkey (load tk pk3))
$WDIGIT
          (let pos (add (load dbase dw) (sub k3 (load dstart dw))))
          (store kout pos wkey)
$VSTORE)))
    (barrier)
    (if (lt l 16u32)
      (then (store dbase l (add (load dbase l) (sub (load dstart (add l 1u32)) (load dstart l))))))
    (barrier)))
]]

local function hist_kernel(be, kt)
  return U.kernel(be, "sort_hist:" .. kt, function()
    return U.fill(HIST, { KT = kt, DIGIT = indent(digit(kt, "key", "_"), 4) })
  end)
end

local function scatter_kernel(be, kt, vt)
  return U.kernel(be, "sort_scatter:" .. kt .. ":" .. (vt or "none"), function()
    local items, ranks = {}, {}
    for j = 0, U.ITEMS - 1 do
      local s = "_" .. j
      local it = {
        ("(let q%s (add (mul l 8u32) %du32))"):format(s, j),
        ("(let pq%s (add q%s (shr q%s 5u32)))"):format(s, s, s),
        ("(let key%s (load tk pq%s))"):format(s, s),
        vt and ("(let val%s (load tv pq%s))"):format(s, s) or nil,
      }
      it[#it + 1] = ("(let ok%s (lt q%s tn))"):format(s, s)
      it[#it + 1] = digit(kt, "key" .. s, s)
      it[#it + 1] = ("(let ci%s (add (mul d%s 256u32) l))"):format(s, s)
      it[#it + 1] = ("(let pc%s (add ci%s (shr ci%s 5u32)))"):format(s, s, s)
      it[#it + 1] = ("(if ok%s (then (store cnt pc%s (add (load cnt pc%s) 1u32))))")
        :format(s, s, s)
      items[#items + 1] = table.concat(it, "\n")
      ranks[#ranks + 1] = ("(if ok%s\n  (then\n    (let r%s (load cnt pc%s))\n"
        .. "    (store cnt pc%s (add r%s 1u32))\n    (let pr%s (add r%s (shr r%s 5u32)))\n"
        .. "    (store tk pr%s key%s)%s))"):format(s, s, s, s, s, s, s, s, s, s,
        vt and ("\n    (store tv pr%s val%s)"):format(s, s) or "")
    end
    local bs = scan.block_scan({ p = "bs_", arr = "cnt", m = 16, t = "u32", op = "add",
      carry = "0u32", exclusive = true, store = true, pad = true, sa = "sa", sb = "sb" })
    return U.fill(SCATTER, {
      KT = kt, VT = vt or "none",
      VDECL = vt and ("  (buffer vin %s read)\n  (buffer vout %s write)"):format(vt, vt) or "",
      VSHARED = vt and ("  (shared tv %s 2112)"):format(vt) or "",
      VLOAD = vt and "\n      (store tv pk (load vin (add base k)))" or "",
      ITEMS = indent(table.concat(items, "\n"), 4),
      SCAN = indent(bs, 4),
      RANKS = indent(table.concat(ranks, "\n"), 4),
      WDIGIT = indent(digit(kt, "wkey", "w"), 10),
      VSTORE = vt and "          (store vout pos (load tv pk3))" or "",
    })
  end)
end

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
    if sk.count < n or rawequal(sk, keys) or (values and rawequal(sk, values)) then
      U.raise(name, "opts.scratch.keys must be another buffer with at least #keys elements",
        "allocate be:buffer(keys.type, #keys) once and pass it")
    end
  else
    sk = U.scratch(be, "sort_keys", keys.type, n)
  end
  if values then
    if sv ~= nil then
      U.check_buffer(name, be, sv, "opts.scratch.values", { values.type })
      if sv.count < n or rawequal(sv, values) or rawequal(sv, keys) or rawequal(sv, sk) then
        U.raise(name, "opts.scratch.values must be another buffer with at least #values "
          .. "elements", "allocate be:buffer(values.type, #values) once and pass it")
      end
    else
      sv = U.scratch(be, "sort_values", values.type, n)
    end
  end
  return sk, sv
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
    if rawequal(values, keys) then
      U.raise(name, "values is keys", "pass a separate values buffer (or none)")
    end
  end
  opts = U.check_opts(name, opts, { "scratch" }, 4)
  local n = keys.count
  local sk, sv = scratch_of(name, be, opts, keys, values)
  if n <= 1 then
    return keys, U.no_time()
  end
  local kt, vt = keys.type, values and values.type
  local chunk, G = U.chunks(n)
  local hist = U.scratch(be, "sort_hist", "u32", 16 * U.MAXG)
  local kh, ks = hist_kernel(be, kt), scatter_kernel(be, kt, vt)
  local steps = {}
  local ka, kb, va, vb = keys, sk, values, sv
  local passes = WIDE[kt] and 16 or 8
  for p = 0, passes - 1 do
    local shift = 4 * p
    steps[#steps + 1] = { kh, { kin = ka, hist = hist, n = n, chunk = chunk, shift = shift,
      ng = G }, { grid = { G } } }
    scan.steps(be, "u32", "add", true, hist, hist, 16 * G, steps)
    local a = { kin = ka, kout = kb, hist = hist, n = n, chunk = chunk, shift = shift, ng = G }
    if vt then a.vin, a.vout = va, vb end
    steps[#steps + 1] = { ks, a, { grid = { G } } }
    ka, kb, va, vb = kb, ka, vb, va
  end
  local _, timing = U.run(name, be, steps, nil, timed)
  return keys, timing
end

return M
