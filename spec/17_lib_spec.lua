-- 17: vyre.lib, GPU primitives written as vyre programs (docs/LIB.md). One suite runs
-- on the reference backend (always), on CUDA (tag `gpu`) and on the fake CUDA driver (tag
-- `fakecuda`, scripts/test.sh's fake pass: the CUDA runtime with every kernel
-- interpreted on the CPU): every primitive against plain Lua at sizes 0, 1, 31, 32, 33,
-- 1025 and 100000 (sort: fewer; the fake: 5000 for 100000), random inputs from fixed
-- seeds. Float sums and scans are compared bit for bit with a Lua simulation of the
-- library's fixed order (lib.geometry). A second block checks bit-exact equality of the
-- CUDA results with the reference backend's at sizes up to 10^6 (the fake: up to 20000).
-- The fake's key-type sort sorts 5000 keys as u32 and f64 only, once each (the others up
-- to 1025; "many tiles" goes past several tiles of every type); VYRE_FULL=1: all of them.
local vyre = require("vyre")
local lib = require("vyre.lib")

local G = lib.geometry
local TILE, MAXG, WG = G.tile, G.max_groups, G.workgroup

local FULL_SIZES = { 0, 1, 31, 32, 33, 1025, 100000 }
local SORT_SIZES = { 0, 1, 31, 33, 1025, 5000 }
local NUM = { "i32", "u32", "i64", "u64", "f32", "f64" }

-- Lua models of the types ------------------------------------------------------------

local LM = require("spec.lib_model")
local f32, NAN, isnan, fmin, fmax = LM.f32, LM.NAN, LM.isnan, LM.fmin, LM.fmax
local wrap_i32, OPS, IDENTITY, is_float, same = LM.wrap_i32, LM.OPS, LM.IDENTITY,
  LM.is_float, LM.same

local random_value, random_list = LM.random_value, LM.random_list

-- Compares a downloaded Array with a Lua list (first #want elements).
local function assert_list(t, want, got, what)
  for i = 1, #want do
    if not same(t, want[i], got[i]) then
      error(("%s: element %d is %s, want %s"):format(what, i, tostring(got[i]),
        tostring(want[i])), 2)
    end
  end
end

-- Simulations of the library's fixed orders (lib.geometry) ------------------------------

local function cdiv(a, b) return (a + b - 1) // b end
local function chunks(n)
  local c = TILE * cdiv(cdiv(n, TILE), MAXG)
  return c, cdiv(n, c)
end

-- lib_reduce over xs[b+1 .. e] (0-based [b, e)): invocation l folds b+l, b+l+256, ...;
-- then the fixed tree over the 256 values.
local function sim_chunk_reduce(xs, b, e, op, id)
  local acc = {}
  for l = 0, WG - 1 do
    local a = id
    for i = b + l, e - 1, WG do a = op(a, xs[i + 1]) end
    acc[l] = a
  end
  local half = WG // 2
  while half >= 1 do
    for l = 0, half - 1 do acc[l] = op(acc[l], acc[l + half]) end
    half = half // 2
  end
  return acc[0]
end

local function sim_reduce(t, op, xs)
  local f, id = OPS[t][op], IDENTITY[t][op]
  local n = #xs
  if n <= TILE then return sim_chunk_reduce(xs, 0, n, f, id) end
  local chunk, ng = chunks(n)
  local parts = {}
  for g = 0, ng - 1 do
    parts[g + 1] = sim_chunk_reduce(xs, g * chunk, math.min(n, (g + 1) * chunk), f, id)
  end
  return sim_chunk_reduce(parts, 0, ng, f, id)
end

-- One workgroup of lib_scan over [cbeg, cend), starting from carry; writes out[].
local function sim_chunk_scan(xs, cbeg, cend, carry, f, id, excl, out)
  local items = TILE // WG
  for base = cbeg, cend - 1, TILE do
    local v = {}
    for k = 0, TILE - 1 do
      local gi = base + k
      v[k] = gi < cend and xs[gi + 1] or id
    end
    local s = {}
    for l = 0, WG - 1 do
      local a = id
      for j = 0, items - 1 do a = f(a, v[l * items + j]) end
      s[l] = a
    end
    local d = 1
    while d < WG do
      local ns = {}
      for l = 0, WG - 1 do ns[l] = l >= d and f(s[l - d], s[l]) or s[l] end
      s, d = ns, d * 2
    end
    for l = 0, WG - 1 do
      local r = l > 0 and f(carry, s[l - 1]) or carry
      for j = 0, items - 1 do
        local k = l * items + j
        local x = v[k]
        local o
        if excl then
          o = r
          r = f(r, x)
        else
          r = f(r, x)
          o = r
        end
        if base + k < cend then out[base + k + 1] = o end
      end
    end
    carry = f(carry, s[WG - 1])
  end
end

local function scan_init(t, op, excl)
  if excl and op == "add" and is_float(t) then return 0.0 end
  return IDENTITY[t][op]
end

local function sim_scan(t, op, xs, excl)
  local f, id = OPS[t][op], IDENTITY[t][op]
  if require("vyre.lib.scan_onepass").config.enabled then -- the single-pass order
    return require("spec.scan_onepass_sim").scan(t, f, id, scan_init(t, op, excl), xs, excl)
  end
  local n, out = #xs, {}
  if cdiv(n, TILE) <= 8 then
    sim_chunk_scan(xs, 0, n, scan_init(t, op, excl), f, id, excl, out)
    return out
  end
  local chunk, ng = chunks(n)
  local parts, pscan = {}, {}
  for g = 0, ng - 1 do
    parts[g + 1] = sim_chunk_reduce(xs, g * chunk, math.min(n, (g + 1) * chunk), f, id)
  end
  sim_chunk_scan(parts, 0, ng, scan_init(t, op, true), f, id, true, pscan)
  for g = 0, ng - 1 do
    local carry = g == 0 and scan_init(t, op, excl) or pscan[g + 1]
    sim_chunk_scan(xs, g * chunk, math.min(n, (g + 1) * chunk), carry, f, id, excl, out)
  end
  return out
end

-- Sequential (left-fold) scan, for integers and exactly summable floats.
local function seq_scan(t, op, xs, excl)
  local f, out = OPS[t][op], {}
  local acc = scan_init(t, op, excl)
  for i = 1, #xs do
    if excl then
      out[i] = acc
      acc = (i == 1) and xs[1] or f(acc, xs[i])
    else
      acc = (i == 1) and xs[1] or f(acc, xs[i])
      out[i] = acc
    end
  end
  return out
end

-- The order-preserving unsigned image of a key (sort.lua), as a Lua integer.
local function sort_image(t, v)
  if t == "u32" then return v end
  if t == "i32" then return (v & 0xffffffff) ~ 0x80000000 end
  if t == "f32" then
    local b = string.unpack("<I4", string.pack("<f", v))
    return (b >> 31) ~= 0 and (b ~ 0xffffffff) or (b ~ 0x80000000)
  end
  if t == "u64" then return v end
  if t == "i64" then return v ~ math.mininteger end
  local b = string.unpack("<i8", string.pack("<d", v))
  return b < 0 and ~b or (b ~ math.mininteger)
end

local function image_less(t, a, b)
  if t == "u64" or t == "i64" or t == "f64" then return math.ult(a, b) end
  return a < b
end

-- Stable sort of keys (Lua values) -> permutation (1-based original indices).
local function stable_order(t, keys)
  local idx, img = {}, {}
  for i = 1, #keys do
    idx[i] = i
    img[i] = sort_image(t, keys[i])
  end
  table.sort(idx, function(a, b)
    if img[a] ~= img[b] then return image_less(t, img[a], img[b]) end
    return a < b
  end)
  return idx
end

-- Stable order of keys by img(t, key) (an unsigned image as sort_image gives).
local function stable_order_by(t, keys, img_of)
  local idx, img = {}, {}
  for i = 1, #keys do
    idx[i] = i
    img[i] = img_of(t, keys[i])
  end
  table.sort(idx, function(a, b)
    if img[a] ~= img[b] then return image_less(t, img[a], img[b]) end
    return a < b
  end)
  return idx
end

-- The image under {bits = {lo, hi}}: image bits lo..hi-1 (docs/LIB.md).
local function bits_image(lo, hi)
  return function(t, v)
    local w = (t == "u64" or t == "i64" or t == "f64") and 64 or 32
    local x = sort_image(t, v) >> lo
    if hi - lo < w then x = x & ((1 << (hi - lo)) - 1) end
    return x
  end
end

-- The image under {order = "numpy"}: every NaN above +inf (all ones), -0 as +0.
local function numpy_image(t, v)
  if v ~= v then return t == "f32" and 0xffffffff or -1 end
  if v == 0 then v = 0.0 end
  return sort_image(t, v)
end

-- The bits of a float (payload and sign included), or the integer itself.
local function rawbits(t, v)
  if t == "f32" then return string.unpack("<I4", string.pack("<f", v)) end
  if t == "f64" then return string.unpack("<i8", string.pack("<d", v)) end
  return v
end

local function f64_of_bits(b) return (string.unpack("<d", string.pack("<i8", b))) end

-- Histogram bin of x (lib/histogram.lua's formulas), or nil when not counted.
local function hist_bin(t, x, nb, lo, hi)
  if not (x >= lo and x < hi) then
    if t ~= "u64" then return nil end
  end
  local b
  if t == "f32" then
    local scale = f32(nb / (hi - lo))
    b = math.floor(f32(f32(x - lo) * scale))
  elseif t == "f64" then
    b = math.floor((x - lo) * (nb / (hi - lo)))
  elseif t == "i32" or t == "u32" then
    b = (x - lo) * nb // (hi - lo)
  else
    local function uf(v) return (v >> 32) * 4294967296.0 + (v & 0xffffffff) end
    if t == "u64" and not (not math.ult(x, lo) and math.ult(x, hi)) then return nil end
    b = math.floor(uf(x - lo) * (nb / uf(hi - lo)))
  end
  return math.min(b, nb - 1)
end

-- Backends -----------------------------------------------------------------------------

local function error_of(f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(err)
end

local function backends()
  local H = require("spec.helpers")
  return H.only_loaded({
    { name = "reference", tag = "", open = function() return vyre.backend("reference") end },
    { name = "cuda", tag = " #gpu", open = function()
      return assert(require("vyre.cuda").device(0))
    end },
    { name = "fake CUDA driver's", tag = " #fakecuda", open = H.fake_backend, small = true },
  })
end

for _, kind in ipairs(backends()) do
  describe("vyre.lib on the " .. kind.name .. " backend" .. kind.tag, function()
    local be
    -- the fake interprets on the CPU: 5000 stands in for 100000
    local SIZES = kind.small and { 0, 1, 31, 32, 33, 1025, 5000 } or FULL_SIZES
    local BIG = kind.small and 5000 or 100000

    setup(function()
      be = kind.open()
    end)

    it("reduces add/min/max over every numeric type, floats in the fixed order", function()
      for ti, t in ipairs(NUM) do
        for _, n in ipairs(SIZES) do
          local xs = random_list(t, n, 1000 * ti + n)
          local buf = be:buffer(t, xs)
          for _, op in ipairs({ "add", "min", "max" }) do
            if n == 0 then
              if op == "add" then
                assert.are.equal(0, lib.reduce(be, buf, op))
              else
                assert.matches("vyre.lib.reduce: " .. op .. " of an empty buffer has no value",
                  error_of(lib.reduce, be, buf, op), 1, true)
              end
            else
              local got = lib.reduce(be, buf, op)
              local want = sim_reduce(t, op, xs)
              assert.is_true(same(t, want, got),
                ("%s %s n=%d: got %s want %s"):format(t, op, n, tostring(got), tostring(want)))
              if not is_float(t) then
                -- integers: any order gives the plain fold
                local f, acc = OPS[t][op], xs[1]
                for i = 2, n do acc = f(acc, xs[i]) end
                assert.are.equal(acc, got)
              elseif op == "add" then
                assert.is_true(same(t, got, lib.reduce(be, buf, op)), "same bits twice")
              end
            end
          end
          buf:free()
        end
      end
    end)

    it("reduces floats with NaN, signed zeros and infinities as vyre's min/max do", function()
      for _, t in ipairs({ "f32", "f64" }) do
        local function red(list, op) return lib.reduce(be, be:buffer(t, list), op) end
        assert.are.equal(-math.huge, red({ 1.0, NAN, -math.huge, 3.0 }, "min"))
        assert.are.equal(math.huge, red({ NAN, math.huge, -1.0 }, "max"))
        assert.are.equal(2.0, red({ NAN, 2.0, NAN }, "min"))
        assert.is_true(isnan(red({ NAN, NAN }, "max")))
        local zmin = red({ 0.0, -0.0, 0.0 }, "min")
        assert.is_true(zmin == 0 and 1 / zmin < 0, "-0 < +0 for min")
        local zmax = red({ -0.0, 0.0, -0.0 }, "max")
        assert.is_true(zmax == 0 and 1 / zmax > 0, "+0 > -0 for max")
        local zsum = red({ -0.0, -0.0 }, "add")
        assert.is_true(zsum == 0 and 1 / zsum < 0, "-0 + -0 = -0")
        assert.is_true(isnan(red({ 1.0, NAN }, "add")))
        assert.are.equal(math.huge, red({ 1.0, math.huge }, "add"))
        -- a NaN among many elements, in another chunk than the minimum
        local many = random_list(t, 5000, 7)
        many[4000] = NAN
        many[17] = -1e30
        assert.are.equal(t == "f32" and f32(-1e30) or -1e30, red(many, "min"))
      end
    end)

    it("scans inclusive and exclusive, add/min/max, across many workgroups", function()
      for ti, t in ipairs(NUM) do
        for _, n in ipairs(SIZES) do
          local xs = random_list(t, n, 2000 * ti + n)
          local src = be:buffer(t, xs)
          local dst = be:buffer(t, n)
          local ops = (n == 100000 and t ~= "i32" and t ~= "f32") and { "add" }
            or { "add", "min", "max" }
          for _, op in ipairs(ops) do
            for _, excl in ipairs({ false, true }) do
              assert.are.equal(dst, lib.scan(be, src, dst, op, { exclusive = excl }))
              local got = dst:download()
              local want = is_float(t) and sim_scan(t, op, xs, excl) or seq_scan(t, op, xs, excl)
              assert_list(t, want, got, ("%s %s excl=%s n=%d"):format(t, op, excl, n))
              if is_float(t) and op ~= "add" then
                assert_list(t, seq_scan(t, op, xs, excl), got, "float min/max fold")
              end
            end
          end
          src:free()
          dst:free()
        end
      end
    end)

    it("scans exactly summable floats like a sequential cumsum, and in place", function()
      for _, t in ipairs({ "f32", "f64" }) do
        for _, n in ipairs({ 33, 1025, 100000 }) do
          math.randomseed(n)
          local xs = {}
          for i = 1, n do xs[i] = math.random(-100, 100) + 0.0 end
          local buf = be:buffer(t, xs)
          lib.scan(be, buf, buf, "add") -- in place
          assert_list(t, seq_scan(t, "add", xs, false), buf:download(), "in place " .. t)
          local ex = be:buffer(t, xs)
          lib.scan(be, ex, ex, "add", { exclusive = true })
          local got = ex:download()
          assert.is_true(got[1] == 0 and 1 / got[1] > 0, "exclusive add starts at +0")
          assert_list(t, seq_scan(t, "add", xs, true), got, "exclusive in place " .. t)
          local ex2 = be:buffer(t, xs)
          lib.scan(be, ex2, ex2, { exclusive = true }) -- opts in place of op: add
          assert.are.equal(got:bytes(), ex2:download():bytes())
        end
      end
    end)

    it("compacts stably with flags buffers and predicates, returning the count", function()
      for ti, t in ipairs({ "i32", "u32", "f32", "u64", "f64" }) do
        for _, n in ipairs(SIZES) do
          local xs = random_list(t, n, 3000 * ti + n)
          local src = be:buffer(t, xs)
          local flags = {}
          for i = 1, n do flags[i] = math.random(0, 2) == 0 and 0 or math.random(1, 9) end
          local pred = ({ i32 = "(gt x 0i32)", u32 = "(lt x 1000000000u32)",
            f32 = "(ge x 0x0p+0f32)", u64 = "(eq (and x 1u64) 1u64)",
            f64 = "(lt x 0x0p+0f64)" })[t]
          local keep = ({
            i32 = function(x) return x > 0 end,
            u32 = function(x) return x < 1000000000 end,
            f32 = function(x) return x >= 0 end,
            u64 = function(x) return x & 1 == 1 end,
            f64 = function(x) return x < 0 end })[t]
          for _, mode in ipairs({ "u32", "bool", "pred" }) do
            local arg
            local want = {}
            if mode == "pred" then
              arg = pred
              for i = 1, n do if keep(xs[i]) then want[#want + 1] = xs[i] end end
            else
              local fl = {}
              for i = 1, n do
                if mode == "bool" then fl[i] = flags[i] ~= 0 else fl[i] = flags[i] end
                if flags[i] ~= 0 then want[#want + 1] = xs[i] end
              end
              arg = be:buffer(mode, fl)
            end
            local sentinel = is_float(t) and 12345.0 or 12345
            local dst = be:buffer(t, n + 1)
            lib.fill(be, dst, sentinel)
            local count = lib.compact(be, src, arg, dst)
            assert.are.equal(#want, count, ("%s %s n=%d"):format(t, mode, n))
            local got = dst:download()
            assert_list(t, want, got, ("compact %s %s n=%d"):format(t, mode, n))
            assert.is_true(same(t, sentinel, got[count + 1]), "nothing written past count")
          end
        end
      end
    end)

    it("compacts with a DSL function as the predicate, built once per function and type",
      function()
        local cases = {
          { "i32", function(x) return x:gt(0) end, "(gt x 0i32)" },
          { "i32", function(x) return x:gt(-5):land(x:lt(5)) end,
            "(land (gt x -5i32) (lt x 5i32))" },
          { "u32", function(x) return x:band(1):eq(0) end, "(eq (and x 1u32) 0u32)" },
          { "f32", function(x) return x:abs():lt(1.0) end, "(lt (abs x) 0x1p+0f32)" },
          { "f64", function(x) return x:ge(0.0) end, "(ge x 0x0p+0f64)" },
          { "bool", function(x) return x:lnot() end, "(lnot x)" },
        }
        for ci, case in ipairs(cases) do
          local t, fn, text = case[1], case[2], case[3]
          for _, n in ipairs({ 0, 33, 5000 }) do
            local xs
            if t == "bool" then
              xs = {}
              for i = 1, n do xs[i] = math.random(0, 1) == 1 end
            else
              xs = random_list(t, n, 500 * ci + n)
              if t == "i32" then
                for i = 1, n, 3 do xs[i] = math.random(-9, 9) end
              end
            end
            local src = be:buffer(t, xs)
            local a, b = be:buffer(t, n), be:buffer(t, n)
            local ca = lib.compact(be, src, fn, a)
            local cb = lib.compact(be, src, text, b)
            assert.are.equal(cb, ca, ("%s %s n=%d"):format(t, text, n))
            if n > 0 then
              assert.are.equal(b:download():bytes(), a:download():bytes())
            end
          end
        end
        -- called once per function and element type; the text's kernels are shared
        local calls = 0
        local positive = function(x)
          calls = calls + 1
          return x:gt(0)
        end
        local src, dst = be:buffer("i32", { 3, -1, 4 }), be:buffer("i32", 3)
        assert.are.equal(2, lib.compact(be, src, positive, dst))
        local compiles = be:stats().compiles
        assert.are.equal(2, lib.compact(be, src, positive, dst))
        assert.are.equal(2, lib.compact(be, src, "(gt x 0i32)", dst))
        assert.are.equal(1, calls)
        if be.name == "reference" then assert.are.equal(compiles, be:stats().compiles) end
        assert.are.equal(2, lib.compact(be, be:buffer("f32", { 1.5, -2.0, 0.5 }), positive,
          be:buffer("f32", 3)))
        assert.are.equal(2, calls)
      end)

    it("compacts into a short dst, writing only what fits", function()
      local src = be:buffer("i32", { 5, -1, 6, 7, -2, 8 })
      local dst = be:buffer("i32", 2)
      assert.are.equal(4, lib.compact(be, src, "(gt x 0i32)", dst))
      assert.are.same({ 5, 6 }, dst:download():totable())
    end)

    it("sorts keys of every key type, stably with payloads", function()
      for ti, t in ipairs({ "u32", "i32", "f32", "u64", "i64", "f64" }) do
        local sizes = { table.unpack(SORT_SIZES) }
        if t == "u32" and BIG ~= sizes[#sizes] then sizes[#sizes + 1] = BIG end
        if kind.small and os.getenv("VYRE_FULL") ~= "1" and t ~= "u32" and t ~= "f64" then
          sizes[#sizes] = nil -- the fake: 5000 keys for a 32- and a 64-bit type only
        end
        for _, n in ipairs(sizes) do
          math.randomseed(4000 * ti + n)
          local keys = {}
          for i = 1, n do
            -- few distinct keys half the time, so stability matters
            keys[i] = random_value(t)
            if i % 2 == 0 then keys[i] = keys[math.random(1, i)] end
          end
          local vals = {}
          for i = 1, n do vals[i] = i - 1 end
          local kb, vb = be:buffer(t, keys), be:buffer("u32", vals)
          assert.are.equal(kb, lib.sort(be, kb, vb))
          local order = stable_order(t, keys)
          local gk, gv = kb:download(), vb:download()
          for i = 1, n do
            if not same(t, keys[order[i]], gk[i]) or gv[i] ~= order[i] - 1 then
              error(("%s n=%d: position %d has key %s value %d, want key %s value %d"):format(
                t, n, i, tostring(gk[i]), gv[i], tostring(keys[order[i]]), order[i] - 1))
            end
          end
          -- keys only (the 100000-key sort above is the slow one on the reference)
          local ko = be:buffer(t, n <= 5000 and keys or {})
          lib.sort(be, ko)
          assert_list(t, (function()
            local w = {}
            for i = 1, #ko do w[i] = keys[order[i]] end
            return w
          end)(), ko:download(), t .. " keys only")
        end
      end
    end)

    it("sorts many tiles without values: random, few distinct, sorted, reversed, equal",
      function()
        -- past several tiles of every pass (32-bit keys alone: 8192 keys a tile)
        local n = 3 * 8192 + 5
        for ti, t in ipairs({ "u32", "i32", "f32", "u64", "i64", "f64" }) do
          local modes = (t == "u32" or t == "f64") and { "few", "sorted", "reversed", "equal" }
            or { "few" }
          for _, mode in ipairs(modes) do
            math.randomseed(6000 * ti + #mode)
            local keys = random_list(t, n, 6000 * ti + #mode)
            if mode == "few" then
              for i = 2, n, 2 do keys[i] = keys[math.random(1, i - 1)] end
            elseif mode == "equal" then
              for i = 2, n do keys[i] = keys[1] end
            end
            local order = stable_order(t, keys)
            local want = {}
            for i = 1, n do want[i] = keys[order[i]] end
            if mode == "sorted" or mode == "reversed" then
              keys = {}
              for i = 1, n do keys[i] = want[mode == "sorted" and i or n + 1 - i] end
            end
            local kb = be:buffer(t, keys)
            lib.sort(be, kb)
            assert_list(t, want, kb:download(), ("%s %s n=%d"):format(t, mode, n))
          end
        end
      end)

    it("sorts floats with NaN, signed zeros, infinities and subnormals in place", function()
      local pos_nan = string.pack("<I4", 0x7fc00001)
      local neg_nan = string.pack("<I4", 0xffc00002)
      local function f(x) return string.pack("<f", x) end
      local raw = table.concat({ pos_nan, f(1.5), f(0.0), f(-0.0), f(math.huge), neg_nan,
        f(-math.huge), f(-1.5), f(1e-45), f(-1e-45), f(0.0), f(-0.0) })
      local kb = be:buffer("f32", vyre.array("f32", raw))
      local vb = be:buffer("u32", { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 })
      lib.sort(be, kb, vb)
      local got = kb:download():bytes()
      local want = table.concat({ neg_nan, f(-math.huge), f(-1.5), f(-1e-45), f(-0.0), f(-0.0),
        f(0.0), f(0.0), f(1e-45), f(1.5), f(math.huge), pos_nan })
      assert.are.equal(want, got)
      assert.are.same({ 5, 6, 7, 9, 3, 11, 2, 10, 8, 1, 4, 0 }, vb:download():totable())
      -- i32 extremes and f64 with the same rules
      local ib = be:buffer("i32", { 0, -1, 2147483647, -2147483648, 1, -2147483648 })
      lib.sort(be, ib)
      assert.are.same({ -2147483648, -2147483648, -1, 0, 1, 2147483647 }, ib:download():totable())
      local pnan = string.unpack("<d", string.pack("<I8", 0x7ff8000000000000))
      local db = be:buffer("f64", { 2.0, -0.0, pnan, -math.huge, 0.0, 5e-324 })
      lib.sort(be, db)
      local d = db:download()
      assert.are.equal(-math.huge, d[1])
      assert.is_true(d[2] == 0 and 1 / d[2] < 0)
      assert.is_true(d[3] == 0 and 1 / d[3] > 0)
      assert.are.same({ 5e-324, 2.0 }, { d[4], d[5] })
      assert.is_true(isnan(d[6]))
    end)

    local NEW_SIZES = kind.small and { 0, 1, 31, 33, 2049, 5000 } or { 0, 1, 31, 33, 2049, 100000 }

    -- keys with few distinct values half the time (stability matters), n of type t
    local function dup_keys(t, n, seed)
      math.randomseed(seed)
      local keys = {}
      for i = 1, n do
        keys[i] = random_value(t)
        if i % 2 == 0 then keys[i] = keys[math.random(1, i)] end
      end
      return keys
    end

    local function check_perm(t, keys, order, kb, vals, vb, what)
      local gk = kb:download()
      local gv = vb and vb:download()
      for i = 1, #keys do
        if rawbits(t, gk[i]) ~= rawbits(t, keys[order[i]]) or (vb and gv[i] ~= vals[order[i]]) then
          error(("%s: position %d has key %s, want %s"):format(what, i, tostring(gk[i]),
            tostring(keys[order[i]])))
        end
      end
    end

    it("sorts by a range of key bits only, stably (opts.bits)", function()
      for _, c in ipairs({ { "u32", 0, 8 }, { "u32", 3, 11 }, { "u32", 4, 28 }, { "i32", 16, 32 },
        { "i64", 40, 64 }, { "f32", 0, 32 } }) do
        local t, lo, hi = c[1], c[2], c[3]
        for _, n in ipairs(NEW_SIZES) do
          if n <= 5000 or t == "u32" then
            local keys = dup_keys(t, n, 7000 + n + lo)
            local vals = {}
            for i = 1, n do vals[i] = i - 1 end
            local kb, vb = be:buffer(t, keys), be:buffer("u32", vals)
            assert.are.equal(kb, lib.sort(be, kb, vb, { bits = { lo, hi } }))
            check_perm(t, keys, stable_order_by(t, keys, bits_image(lo, hi)), kb, vals, vb,
              ("%s bits {%d, %d} n=%d"):format(t, lo, hi, n))
          end
        end
      end
    end)

    it("sorts with 64-bit values", function()
      for _, c in ipairs({ { "u32", "u64" }, { "f32", "f64" }, { "i64", "i64" },
        { "f64", "u64" } }) do
        local kt, vt = c[1], c[2]
        for _, n in ipairs(NEW_SIZES) do
          if n <= 5000 or kt == "u32" then
            local keys = dup_keys(kt, n, 8000 + n)
            local vals = {}
            for i = 1, n do
              vals[i] = vt == "f64" and (i - 1) * 0.5 - 1e300 or (i - 1) * 0x100000001 - 7
            end
            local kb, vb = be:buffer(kt, keys), be:buffer(vt, vals)
            lib.sort(be, kb, vb)
            check_perm(kt, keys, stable_order(kt, keys), kb, vals, vb,
              ("%s keys %s values n=%d"):format(kt, vt, n))
          end
        end
      end
    end)

    it("argsorts into a new u32 buffer of source positions, stably", function()
      for _, t in ipairs({ "u32", "f32", "i64", "f64" }) do
        for _, n in ipairs(NEW_SIZES) do
          if n <= 5000 or t == "u32" then
            local keys = dup_keys(t, n, 9000 + n)
            local kb = be:buffer(t, keys)
            local pos = lib.argsort(be, kb)
            assert.are.equal("u32", pos.type)
            assert.are.equal(n, pos.count)
            local order = stable_order(t, keys)
            local gp = pos:download()
            for i = 1, n do assert.are.equal(order[i] - 1, gp[i]) end
            assert_list(t, keys, kb:download(), "argsort leaves the keys as they were")
          end
        end
      end
      -- opts.out and a bits range
      local keys = dup_keys("u32", 3000, 17)
      local out = be:buffer("u32", 3000)
      assert.are.equal(out, lib.argsort(be, be:buffer("u32", keys), { out = out,
        bits = { 0, 5 } }))
      local order = stable_order_by("u32", keys, bits_image(0, 5))
      local gp = out:download()
      for i = 1, 3000 do assert.are.equal(order[i] - 1, gp[i]) end
    end)

    it("sorts floats in numpy's order: NaN last whatever its bits, -0 equal to +0", function()
      local specials = { 0.0, -0.0, 1 / 0, -1 / 0, 1.5, -1.5,
        f64_of_bits(0x7ff8000000000000), f64_of_bits(-0x0008000000000000), -- +NaN, -NaN
        f64_of_bits(0x7ff0000000000123), f64_of_bits(-0x000ffffffffffff1) } -- payloads
      for _, t in ipairs({ "f32", "f64" }) do
        for _, n in ipairs(NEW_SIZES) do
          if n <= 5000 or t == "f32" then
            math.randomseed(9500 + n)
            local keys = {}
            for i = 1, n do
              keys[i] = math.random(1, 3) == 1 and specials[math.random(1, #specials)]
                or random_value(t)
            end
            -- as stored (an f32 buffer keeps the top of a NaN's payload)
            keys = n > 0 and be:buffer(t, keys):download():totable() or {}
            local vals = {}
            for i = 1, n do vals[i] = i - 1 end
            local kb, vb = be:buffer(t, keys), be:buffer("u32", vals)
            lib.sort(be, kb, vb, { order = "numpy" })
            check_perm(t, keys, stable_order_by(t, keys, numpy_image), kb, vals, vb,
              ("%s numpy n=%d"):format(t, n))
            local pb = lib.argsort(be, be:buffer(t, keys), { order = "numpy" })
            local want = stable_order_by(t, keys, numpy_image)
            local gp = pb:download()
            for i = 1, n do assert.are.equal(want[i] - 1, gp[i]) end
          end
        end
      end
    end)

    -- sorted input with runs: the Lua model of unique / run_length / reduce_by_key
    local function runs_of(t, keys)
      local starts = {}
      for i = 1, #keys do
        if i == 1 or rawbits(t, keys[i]) ~= rawbits(t, keys[i - 1]) then starts[#starts + 1] = i end
      end
      return starts
    end

    local function sorted_runs(t, n, seed)
      local keys = dup_keys(t, n, seed)
      math.randomseed(seed + 1)
      for i = 2, n do -- longer runs
        if math.random(1, 4) > 1 then keys[i] = keys[i - 1] end
      end
      if t == "f32" and n > 2 then keys[1], keys[2] = -0.0, 0.0 end -- distinct bits
      local kb = be:buffer(t, keys)
      lib.sort(be, kb)
      return n > 0 and kb:download():totable() or {}
    end

    it("finds unique values, run lengths and per-key reductions of sorted input", function()
      for _, t in ipairs({ "u32", "i64", "f32" }) do
        for _, n in ipairs(NEW_SIZES) do
          local keys = sorted_runs(t, n, 10000 + n)
          local starts = runs_of(t, keys)
          local m = #starts
          local kb = be:buffer(t, keys)
          local dst = be:buffer(t, n)
          assert.are.equal(m, lib.unique(be, kb, dst))
          local gd = dst:download()
          for j = 1, m do assert.are.equal(rawbits(t, keys[starts[j]]), rawbits(t, gd[j])) end
          local vo, co = be:buffer(t, n), be:buffer("u32", n)
          assert.are.equal(m, lib.run_length(be, kb, vo, co))
          local gv, gc = vo:download(), co:download()
          for j = 1, m do
            local e = j < m and starts[j + 1] or n + 1
            assert.are.equal(rawbits(t, keys[starts[j]]), rawbits(t, gv[j]))
            assert.are.equal(e - starts[j], gc[j])
          end
          for _, vt in ipairs({ "i32", "f64" }) do
            local vals = random_list(vt, n, 11000 + n)
            local ko, vout = be:buffer(t, n), be:buffer(vt, n)
            for _, op in ipairs({ "add", "min", "max" }) do
              assert.are.equal(m, lib.reduce_by_key(be, kb, be:buffer(vt, vals), ko, vout, op))
              local gk, gr = ko:download(), vout:download()
              local f = ({ add = vt == "i32" and function(a, b) return wrap_i32(a + b) end
                or function(a, b) return a + b end, min = vt == "f64" and fmin or math.min,
                max = vt == "f64" and fmax or math.max })[op]
              for j = 1, m do
                local e = j < m and starts[j + 1] - 1 or n
                local acc = vals[starts[j]]
                for i = starts[j] + 1, e do acc = f(acc, vals[i]) end
                assert.are.equal(rawbits(t, keys[starts[j]]), rawbits(t, gk[j]))
                assert.is_true(same(vt, acc, gr[j]), ("%s/%s %s run %d"):format(t, vt, op, j))
              end
            end
          end
        end
      end
    end)

    it("sorts with caller scratch buffers", function()
      local keys = random_list("u32", 3000, 99)
      local kb, vb = be:buffer("u32", keys), be:buffer("f32", 3000)
      lib.iota(be, vb, 0.0, 1.0)
      local sk, sv = be:buffer("u32", 3000), be:buffer("f32", 3000)
      lib.sort(be, kb, vb, { scratch = { keys = sk, values = sv } })
      local order = stable_order("u32", keys)
      local gk, gv = kb:download(), vb:download()
      for i = 1, 3000 do
        assert.are.equal(keys[order[i]], gk[i])
        assert.are.equal(order[i] - 1.0, gv[i])
      end
      local kc = be:buffer("u32", keys)
      lib.sort(be, kc, { scratch = { keys = sk } }) -- opts in place of values
      assert.are.same(gk:totable(), kc:download():totable())
    end)

    it("counts histograms of ints and floats, ignoring what is out of [lo, hi)", function()
      local cases = {
        { "i32", 10, -1000000, 1000000 }, { "u32", 256, 0, 4294967295 },
        { "f32", 7, -0.5, 0.75 }, { "f64", 5000, -100.0, 100.0 },
        { "i64", 100, -5000000000, 5000000000 }, { "u64", 16, 1 << 62, -1 },
      }
      for ci, c in ipairs(cases) do
        local t, nb, lo, hi = c[1], c[2], c[3], c[4]
        for _, n in ipairs(SIZES) do
          math.randomseed(5000 * ci + n)
          local xs = {}
          for i = 1, n do
            if t == "i32" then xs[i] = math.random(-1100000, 1100000)
            elseif t == "i64" then xs[i] = math.random(-6000000000, 6000000000)
            elseif t == "f64" then xs[i] = (math.random() - 0.5) * 220
            else xs[i] = random_value(t) end
          end
          if n > 3 and is_float(t) then xs[2], xs[3] = NAN, lo end
          local want = {}
          for b = 1, nb do want[b] = 0 end
          for i = 1, n do
            local b = hist_bin(t, xs[i], nb, lo, hi)
            if b then want[b + 1] = want[b + 1] + 1 end
          end
          local h = lib.histogram(be, be:buffer(t, xs), nb, lo, hi)
          assert.are.equal("u32", h.type)
          assert.are.same(want, h:download():totable(), ("%s n=%d"):format(t, n))
        end
      end
      local out = be:buffer("u32", { 9, 9, 9, 9 })
      local h = lib.histogram(be, be:buffer("i32", { 0, 1, 2, 3, 3, 4 }), 3, 0, 4, { out = out })
      assert.are.equal(out, h)
      assert.are.same({ 2, 1, 2, 9 }, out:download():totable()) -- floor(x * 3 / 4)
    end)

    it("fills, counts up and copies every type", function()
      for _, t in ipairs({ "bool", "i32", "u32", "i64", "u64", "f32", "f64" }) do
        for _, n in ipairs(SIZES) do
          local b = be:buffer(t, n)
          local v = t == "bool" and true or (is_float(t) and -2.5 or 7)
          assert.are.equal(b, lib.fill(be, b, v))
          local got = b:download()
          for i = 1, n do
            if got[i] ~= v then error(("fill %s n=%d at %d"):format(t, n, i)) end
          end
          if t ~= "bool" then
            local start, step = is_float(t) and 0.5 or -3, is_float(t) and 0.25 or 2
            if t == "u32" or t == "u64" then start = 3 end
            lib.iota(be, b, start, step)
            got = b:download()
            for i = 1, n do
              local want = start + (i - 1) * step
              if t == "f32" then want = f32(start + f32(f32(i - 1) * step)) end
              if got[i] ~= want then error(("iota %s n=%d at %d: %s"):format(t, n, i, got[i])) end
            end
            lib.iota(be, b)
            if n > 0 then assert.are.equal(n - 1, b:download()[n]) end
          end
          local c = be:buffer(t, n + 2)
          lib.copy(be, b, c)
          local src, dst = b:download(), c:download()
          for i = 1, n do
            if src[i] ~= dst[i] then error(("copy %s n=%d at %d"):format(t, n, i)) end
          end
        end
      end
    end)

    it("reduces and scans CSR segments, empty ones included", function()
      for ti, t in ipairs({ "i32", "u64", "f32", "f64" }) do
        for _, total in ipairs({ 0, 1, 33, 1025, 100000 }) do
          local xs = random_list(t, total, 6000 * ti + total)
          math.randomseed(total + ti)
          local offs = { 0 }
          while offs[#offs] < total do
            local len = math.random(0, 3) == 0 and 0 or math.random(1, 40)
            offs[#offs + 1] = math.min(total, offs[#offs] + len)
          end
          offs[#offs + 1] = total -- a trailing empty segment
          local nseg = #offs - 1
          local vb, ob = be:buffer(t, xs), be:buffer("u32", offs)
          for _, op in ipairs({ "add", "min", "max" }) do
            local f = OPS[t][op]
            local out = be:buffer(t, nseg)
            lib.segmented_reduce(be, vb, ob, out, op)
            local got = out:download()
            for s = 1, nseg do
              local b, e = offs[s], offs[s + 1]
              local want
              if b >= e then
                want = op == "add" and (is_float(t) and 0.0 or 0)
                  or (is_float(t) and (op == "min" and math.huge or -math.huge))
                  or (op == "min" and (t == "u64" and -1 or 0x7fffffff))
                  or (t == "u64" and 0 or -0x80000000)
              else
                want = xs[b + 1]
                for i = b + 2, e do want = f(want, xs[i]) end
              end
              if not same(t, want, got[s]) then
                error(("segreduce %s %s seg %d: %s want %s"):format(t, op, s, tostring(got[s]),
                  tostring(want)))
              end
            end
            for _, excl in ipairs({ false, true }) do
              local dst = be:buffer(t, total)
              lib.segmented_scan(be, vb, ob, dst, op, { exclusive = excl })
              local want = {}
              for s = 1, nseg do
                local seg = {}
                for i = offs[s] + 1, offs[s + 1] do seg[#seg + 1] = xs[i] end
                local sc = seq_scan(t, op, seg, excl)
                for i = 1, #seg do want[offs[s] + i] = sc[i] end
              end
              assert_list(t, want, dst:download(), ("segscan %s %s %s"):format(t, op, excl))
            end
          end
        end
      end
    end)

    it("has a timed variant of every function returning the value and a timing", function()
      local b = be:buffer("u32", { 3, 1, 2 })
      local d = be:buffer("u32", 3)
      local function timing_ok(t) return type(t) == "table" and t.wall_ns >= 0 end
      local v, t = lib.reduce_timed(be, b, "add")
      assert.are.equal(6, v)
      assert.is_true(timing_ok(t) and t.wall_ns > 0)
      local r
      r, t = lib.scan_timed(be, b, d)
      assert.is_true(r == d and timing_ok(t))
      r, t = lib.compact_timed(be, b, "(gt x 1u32)", d)
      assert.is_true(r == 2 and timing_ok(t))
      r, t = lib.histogram_timed(be, b, 4, 0, 4)
      assert.is_true(r.type == "u32" and timing_ok(t))
      r, t = lib.fill_timed(be, d, 1)
      assert.is_true(r == d and timing_ok(t))
      r, t = lib.iota_timed(be, d)
      assert.is_true(r == d and timing_ok(t))
      r, t = lib.copy_timed(be, b, d)
      assert.is_true(r == d and timing_ok(t))
      r, t = lib.sort_timed(be, d)
      assert.is_true(r == d and timing_ok(t))
      assert.are.same({ 1, 2, 3 }, d:download():totable())
      local o = be:buffer("u32", { 0, 2, 3 })
      r, t = lib.segmented_reduce_timed(be, b, o, be:buffer("u32", 2))
      assert.is_true(timing_ok(t))
      assert.are.same({ 4, 2 }, r:download():totable())
      r, t = lib.segmented_scan_timed(be, b, o, d)
      assert.is_true(r == d and timing_ok(t))
      assert.are.same({ 3, 4, 2 }, d:download():totable())
      local e = be:buffer("f32", 0)
      v, t = lib.reduce_timed(be, e)
      assert.are.same({ 0.0, 0 }, { v, t.wall_ns })
    end)

    it("compiles each kernel once per backend and reuses it", function()
      local b = be:buffer("i32", 5000)
      lib.iota(be, b)
      lib.reduce(be, b, "max")
      local k1 = be:stats().compiles -- the reference counts compiles; CUDA counts cache use
      for _ = 1, 3 do assert.are.equal(4999, lib.reduce(be, b, "max")) end
      assert.are.equal(k1, be:stats().compiles)
    end)

    it("says what went wrong and how to fix it", function()
      local u = be:buffer("u32", 4)
      local f = be:buffer("f32", 4)
      local function err(fn, ...) return error_of(fn, ...) end
      assert.matches("^vyre%.lib%.reduce: argument 1 must be a vyre%.Backend, got number%. Fix:",
        err(lib.reduce, 5, u))
      assert.matches("vyre.lib.reduce: unknown op 'mul'. Fix: use one of add, min, max",
        err(lib.reduce, be, u, "mul"), 1, true)
      assert.matches("vyre.lib.reduce: argument 2 (buf) must be a vyre.Buffer, got table. Fix:",
        err(lib.reduce, be, { 1, 2 }), 1, true)
      assert.matches("vyre.lib.reduce: argument 2 (buf) has type bool, which is not supported",
        err(lib.reduce, be, be:buffer("bool", 2)), 1, true)
      local freed = be:buffer("u32", 2)
      freed:free()
      assert.matches("vyre.lib.fill: argument 2 (buf) was freed. Fix:",
        err(lib.fill, be, freed, 1), 1, true)
      assert.matches("vyre.lib.scan: src is u32 but dst is f32. Fix:",
        err(lib.scan, be, u, f), 1, true)
      assert.matches("vyre.lib.scan: src has 4 elements but dst has 5. Fix:",
        err(lib.scan, be, u, be:buffer("u32", 5)), 1, true)
      assert.matches("vyre.lib.scan: unknown option 'inclusive'. Fix:",
        err(lib.scan, be, u, u, "add", { inclusive = true }), 1, true)
      assert.matches("vyre.lib.compact: dst is src; compaction cannot run in place. Fix:",
        err(lib.compact, be, u, "(gt x 0u32)", u), 1, true)
      assert.matches("vyre.lib.compact: the predicate does not compile",
        err(lib.compact, be, u, "(gt x 0i32)", be:buffer("u32", 4)), 1, true)
      assert.matches("vyre.lib.compact: the predicate does not compile",
        err(lib.compact, be, u, "(gt x", be:buffer("u32", 4)), 1, true)
      assert.matches("vyre.lib.compact: flags has 3 elements but src has 4. Fix:",
        err(lib.compact, be, u, be:buffer("u32", 3), be:buffer("u32", 4)), 1, true)
      assert.matches("vyre.lib.compact: argument 3 (flags) has type f32",
        err(lib.compact, be, u, f, be:buffer("u32", 4)), 1, true)
      assert.matches("vyre.lib.compact: argument 3 must be a flags buffer, a predicate string "
        .. "or a predicate function, got number. Fix:", err(lib.compact, be, u, 5, f), 1, true)
      -- function predicates: the DSL's own words for what it refuses
      local ui = be:buffer("i32", 4)
      local di = be:buffer("i32", 4)
      assert.matches("vyre.lib.compact: the predicate function's result: got the plain Lua "
        .. "boolean false where an expression is expected", err(lib.compact, be, ui,
        function(x) return x == 0 end, di), 1, true)
      assert.matches("vyre.lib.compact: the predicate function's result: the condition "
        .. "(add x 1i32) is i32, not bool. Fix: compare it", err(lib.compact, be, ui,
        function(x) return x + 1 end, di), 1, true)
      assert.matches("vyre.lib.compact: the predicate function failed: comparison: Lua turns "
        .. "< <= > >= into booleans", err(lib.compact, be, ui, function(x) return x > 0 end, di),
        1, true)
      assert.matches("vyre.lib.compact: the predicate function failed: gt: 0.5 is not an exact "
        .. "integer", err(lib.compact, be, ui, function(x) return x:gt(0.5) end, di), 1, true)
      assert.matches("vyre.lib.compact: the predicate function returned nothing, not a bool "
        .. "expression. Fix:", err(lib.compact, be, ui, function() end, di), 1, true)
      assert.matches("vyre.lib.compact: the predicate function returned a number (1), not a "
        .. "bool expression. Fix:", err(lib.compact, be, ui, function() return 1 end, di), 1,
        true)
      local _, fmsg = pcall(function() lib.compact(be, ui, function(x) return x == 1 end, di) end)
      assert.matches("17_lib_spec.lua:%d+: vyre.lib.compact: the predicate function's", fmsg)
      assert.matches("vyre.lib.sort: argument 2 (keys) has type bool",
        err(lib.sort, be, be:buffer("bool", 3)), 1, true)
      assert.matches("vyre.lib.sort: keys has 4 elements but values has 3. Fix:",
        err(lib.sort, be, u, be:buffer("u32", 3)), 1, true)
      assert.matches("vyre.lib.sort: argument 3 (values) has type bool",
        err(lib.sort, be, u, be:buffer("bool", 4)), 1, true)
      assert.matches("vyre.lib.sort: opts.scratch.keys must be another buffer",
        err(lib.sort, be, u, nil, { scratch = { keys = be:buffer("u32", 2) } }), 1, true)
      assert.matches("vyre.lib.sort: opts.bits = {8, 4} is not a range of bits of a u32 key. "
        .. "Fix: pass 0 <= lo < hi <= 32", err(lib.sort, be, u, { bits = { 8, 4 } }), 1, true)
      assert.matches("vyre.lib.sort: opts.bits must be a table {lo, hi}",
        err(lib.sort, be, u, { bits = 8 }), 1, true)
      assert.matches("vyre.lib.sort: unknown opts.order 'asc'. Fix:",
        err(lib.sort, be, f, { order = "asc" }), 1, true)
      assert.matches("vyre.lib.sort: opts.order = \"numpy\" is for float keys, not u32. Fix:",
        err(lib.sort, be, u, { order = "numpy" }), 1, true)
      assert.matches("vyre.lib.argsort: opts.out has 2 elements, fewer than #keys = 4. Fix:",
        err(lib.argsort, be, u, { out = be:buffer("u32", 2) }), 1, true)
      assert.matches("vyre.lib.unique: argument 3 (dst) has type f32",
        err(lib.unique, be, u, f), 1, true)
      assert.matches("vyre.lib.run_length: values_out is src. Fix:",
        err(lib.run_length, be, u, u, be:buffer("u32", 4)), 1, true)
      assert.matches("vyre.lib.reduce_by_key: keys has 4 elements but values has 3. Fix:",
        err(lib.reduce_by_key, be, u, be:buffer("u32", 3), be:buffer("u32", 4),
          be:buffer("u32", 4)), 1, true)
      assert.matches("vyre.lib.reduce_by_key: unknown op 'mul'",
        err(lib.reduce_by_key, be, u, u:view(1), be:buffer("u32", 4), be:buffer("u32", 4),
          "mul"), 1, true)
      assert.matches("vyre.lib.histogram: bins must be an integer in [1, 2^32-1], got 0. Fix:",
        err(lib.histogram, be, u, 0, 0, 10), 1, true)
      assert.matches("vyre.lib.histogram: [lo, hi) = [5, 5) is empty. Fix:",
        err(lib.histogram, be, u, 4, 5, 5), 1, true)
      assert.matches("vyre.lib.histogram: [lo, hi) = [0.0, inf) is not a finite",
        err(lib.histogram, be, f, 4, 0.0, math.huge), 1, true)
      assert.matches("vyre.lib.fill: value = 1.5 is not an integer. Fix:",
        err(lib.fill, be, u, 1.5), 1, true)
      assert.matches("vyre.lib.fill: value = -1 is outside the range of u32. Fix:",
        err(lib.fill, be, u, -1), 1, true)
      assert.matches("vyre.lib.copy: dst has 2 elements, fewer than src's 4. Fix:",
        err(lib.copy, be, u, be:buffer("u32", 2)), 1, true)
      assert.matches("vyre.lib.segmented_reduce: offsets is empty. Fix:",
        err(lib.segmented_reduce, be, u, be:buffer("u32", 0), u), 1, true)
      assert.matches("vyre.lib.segmented_reduce: out has 1 elements for 2 segments. Fix:",
        err(lib.segmented_reduce, be, u, be:buffer("u32", { 0, 1, 2 }), be:buffer("u32", 1)),
        1, true)
      assert.matches("vyre.lib.segmented_scan: values is u32 but argument 4 (dst) is f32. Fix:",
        err(lib.segmented_scan, be, u, be:buffer("u32", { 0, 4 }), f), 1, true)
      assert.matches("vyre.lib.reduce_timed: unknown op 'sum'",
        err(lib.reduce_timed, be, u, "sum"), 1, true)
      local foreign = vyre.backend("reference"):buffer("u32", 3) -- another backend object
      assert.matches("^vyre%.lib%.reduce: .*belongs to .*Fix: create",
        err(lib.reduce, be, foreign))
      local fl = be:buffer("u32", 4)
      assert.matches("vyre.lib.compact: dst is the flags buffer. Fix:",
        err(lib.compact, be, u, fl, fl), 1, true)
      assert.matches("vyre.lib.histogram: opts.out is src. Fix:",
        err(lib.histogram, be, u, 2, 0, 4, { out = u }), 1, true)
      -- the message points at the caller's line, not into vyre.lib
      local _, msg = pcall(function() lib.reduce(be, u, "mul") end)
      assert.matches("17_lib_spec.lua:%d+: vyre.lib.reduce:", msg)
    end)
  end)
end

for _, kind in ipairs(require("spec.helpers").cuda_kinds()) do
describe("vyre.lib across backends, " .. kind.name .. " " .. kind.tag, function()
  -- Bit-exact equality of every primitive's CUDA result with the reference backend's,
  -- at sizes up to 10^6 (sort: the reference at 131073; at 10^6 against Lua's stable
  -- order, which a stable sort must reproduce exactly). The fake driver interprets on
  -- the CPU: there every size is cut to at most 20000 (sz below).
  local ref, gpu
  local function sz(list)
    if not kind.small then return list end
    local out = {}
    for _, n in ipairs(list) do
      n = math.min(n, 20000)
      if out[#out] ~= n then out[#out + 1] = n end
    end
    return out
  end

  setup(function()
    ref = vyre.backend("reference")
    gpu = kind.open()
  end)

  local function both(t, xs, fn)
    local a = fn(ref, ref:buffer(t, xs))
    local b = fn(gpu, gpu:buffer(t, xs))
    return a, b
  end

  it("reduces to the same bits", function()
    for ti, t in ipairs(NUM) do
      for _, n in ipairs(sz({ 1, 2049, 99999, 1000000 })) do
        local xs = random_list(t, n, 7000 * ti + n)
        for _, op in ipairs({ "add", "min", "max" }) do
          local a, b = both(t, xs, function(be, buf) return lib.reduce(be, buf, op) end)
          assert.is_true(same(t, a, b), ("%s %s n=%d: ref %s gpu %s"):format(t, op, n,
            tostring(a), tostring(b)))
          if op == "add" and is_float(t) and n <= 100000 then
            assert.is_true(same(t, sim_reduce(t, op, xs), b))
          end
        end
      end
    end
  end)

  it("scans, compacts, histograms and fills to the same bits", function()
    for ti, t in ipairs(NUM) do
      for _, n in ipairs(sz({ 16385, 1000000 })) do
        local xs = random_list(t, n, 8000 * ti + n)
        for _, excl in ipairs({ false, true }) do
          local a, b = both(t, xs, function(be, buf)
            return lib.scan(be, buf, be:buffer(t, n), "add", { exclusive = excl }):download()
          end)
          assert.are.equal(a:bytes(), b:bytes(), t .. " scan")
        end
        local pred = is_float(t) and ("(gt x 0x0p+0" .. t .. ")") or ("(eq (and x 3" .. t
          .. ") 1" .. t .. ")")
        local ca, cb
        local a, b = both(t, xs, function(be, buf)
          local dst = be:buffer(t, n)
          local c = lib.compact(be, buf, pred, dst)
          if be == ref then ca = c else cb = c end
          return dst:download()
        end)
        assert.are.equal(ca, cb)
        assert.are.equal(a:bytes(), b:bytes(), t .. " compact")
        local lo, hi = -1000, 1000
        if t == "u32" or t == "u64" then lo, hi = 0, 1 << 30 end
        if is_float(t) then lo, hi = -0.5, 0.5 end
        a, b = both(t, xs, function(be, buf)
          return lib.histogram(be, buf, 300, lo, hi):download()
        end)
        assert.are.equal(a:bytes(), b:bytes(), t .. " histogram")
        a, b = both(t, xs, function(be, buf)
          return lib.iota(be, buf, is_float(t) and 0.5 or 1, is_float(t) and 0.125 or 3)
            :download()
        end)
        assert.are.equal(a:bytes(), b:bytes(), t .. " iota")
      end
    end
  end)

  it("sorts to the same bits", function()
    for _, t in ipairs({ "u32", "i32", "f32", "u64", "i64", "f64" }) do
      for _, n in ipairs(sz({ 131073, 1000000 })) do
        math.randomseed(n + #t)
        local keys = random_list(t, n, n)
        for i = 2, n, 3 do keys[i] = keys[math.random(1, i)] end
        local vals = {}
        for i = 1, n do vals[i] = i - 1 end
        local gk, gv = gpu:buffer(t, keys), gpu:buffer("u32", vals)
        lib.sort(gpu, gk, gv)
        local order = stable_order(t, keys)
        local k, v = gk:download(), gv:download()
        for i = 1, n do
          if not same(t, keys[order[i]], k[i]) or v[i] ~= order[i] - 1 then
            error(("%s n=%d: position %d differs"):format(t, n, i))
          end
        end
        if n < 1000000 then
          local rk, rv = ref:buffer(t, keys), ref:buffer("u32", vals)
          lib.sort(ref, rk, rv)
          assert.are.equal(rk:download():bytes(), k:bytes())
          assert.are.equal(rv:download():bytes(), v:bytes())
        end
      end
    end
  end)

  it("sorts by bits, in numpy's order, argsorts and finds runs to the same bits", function()
    for _, n in ipairs(sz({ 131073, 1000000 })) do
      local keys = random_list("f32", n, n + 5)
      for i = 2, n, 3 do keys[i] = keys[i - 1] end
      for i = 5, n, 97 do keys[i] = (i % 2 == 0) and -0.0 or 0 / 0 end
      local ints = random_list("u32", n, n + 6)
      local vals = random_list("f64", n, n + 7)
      local function run(be)
        local r = {}
        local kb = be:buffer("f32", keys)
        local pa = lib.argsort(be, kb, { order = "numpy" }):download()
        r.pos, r.postab = pa:bytes(), pa:totable()
        local ib, vb = be:buffer("u32", ints), be:buffer("f64", vals)
        lib.sort(be, ib, vb, { bits = { 4, 23 } })
        r.bits = ib:download():bytes() .. vb:download():bytes()
        lib.sort(be, ib)
        local vo, co = be:buffer("u32", n), be:buffer("u32", n)
        r.rl = lib.run_length(be, ib, vo, co)
        r.rlv = vo:download():bytes() .. co:download():bytes()
        lib.sort(be, kb)
        local ko, so = be:buffer("f32", n), be:buffer("f64", n)
        r.rbk = lib.reduce_by_key(be, kb, be:buffer("f64", vals), ko, so, "add")
        r.rbkv = ko:download():bytes() .. so:download():bytes()
        return r
      end
      local b = run(gpu)
      if n < 1000000 then -- the reference at 10^6 would take minutes
        local a = run(ref)
        for _, k in ipairs({ "pos", "bits", "rl", "rlv", "rbk", "rbkv" }) do
          assert.are.equal(a[k], b[k], ("n=%d: %s"):format(n, k))
        end
      end
      -- the permutation against Lua's stable numpy order, at every size
      local want = stable_order_by("f32", keys, numpy_image)
      for i = 1, n do assert.are.equal(want[i] - 1, b.postab[i]) end
      local sorted = {}
      for i = 1, n do sorted[i] = ints[i] end
      table.sort(sorted)
      local runs = n > 0 and 1 or 0
      for i = 2, n do if sorted[i] ~= sorted[i - 1] then runs = runs + 1 end end
      assert.are.equal(runs, b.rl)
    end
  end)

  it("reduces and scans segments to the same bits", function()
    for _, t in ipairs({ "f32", "f64", "i32" }) do
      local n = kind.small and 20000 or 1000000
      local xs = random_list(t, n, 9)
      local offs, s = { 0 }, 0
      while s < n do
        s = math.min(n, s + math.random(0, 64))
        offs[#offs + 1] = s
      end
      for _, op in ipairs({ "add", "max" }) do
        local a, b = both(t, xs, function(be, buf)
          local out = be:buffer(t, #offs - 1)
          return lib.segmented_reduce(be, buf, be:buffer("u32", offs), out, op):download()
        end)
        assert.are.equal(a:bytes(), b:bytes())
        a, b = both(t, xs, function(be, buf)
          return lib.segmented_scan(be, buf, be:buffer("u32", offs), be:buffer(t, n), op)
            :download()
        end)
        assert.are.equal(a:bytes(), b:bytes())
      end
    end
  end)
end)
end

describe("vyre.lib past 2^32 bytes #gpu #huge", function()
  -- Buffers over 4 GiB: 64-bit byte offsets in downloads and ranges, and element
  -- indices past 2^30 in every kernel. Results are checked exactly with Lua integers,
  -- reading back only ranges at the ends.
  local gpu
  local N = (1 << 30) + 1025 -- u32: 4 GiB + 4100 bytes; u64: 8 GiB + 8200 bytes

  setup(function()
    gpu = assert(require("vyre.cuda").device(0))
  end)

  teardown(function()
    if gpu then lib.release(gpu) end
    collectgarbage()
  end)

  it("iota, reduce and scan over more than 2^32 bytes", function()
    local v = gpu:buffer("u32", N)
    lib.iota(gpu, v)
    local tail = v:download({ first = N - 3, count = 4 }):totable()
    assert.are.same({ N - 4, N - 3, N - 2, N - 1 }, tail)
    local sum = N * (N - 1) // 2 -- fits a Lua integer; u32 add wraps modulo 2^32
    assert.are.equal(sum & 0xffffffff, lib.reduce(gpu, v, "add"))
    assert.are.equal(N - 1, lib.reduce(gpu, v, "max"))
    local w = gpu:buffer("u64", N)
    lib.iota(gpu, w)
    assert.are.equal(sum, lib.reduce(gpu, w, "add"))
    w:free()
    lib.fill(gpu, v, 1)
    local s = gpu:buffer("u32", N)
    lib.scan(gpu, v, s, "add", { exclusive = true })
    assert.are.same({ N - 2, N - 1 }, s:download({ first = N - 1, count = 2 }):totable())
    assert.are.same({ 0, 1 }, s:download({ count = 2 }):totable())
    s:free()
    v:free()
  end)

  it("sorts more than 2^32 bytes of keys", function()
    local k = gpu:buffer("u32", N)
    lib.iota(gpu, k, N - 1, 0xffffffff) -- N-1, N-2, ..., 0 (u32 arithmetic wraps)
    lib.sort(gpu, k)
    assert.are.same({ 0, 1, 2, 3 }, k:download({ count = 4 }):totable())
    assert.are.same({ N - 2, N - 1 }, k:download({ first = N - 1, count = 2 }):totable())
    local mid = N // 2
    assert.are.same({ mid, mid + 1 }, k:download({ first = mid + 1, count = 2 }):totable())
    k:free()
  end)
end)
