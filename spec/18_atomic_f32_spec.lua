-- 18: f32 atomic min and max (docs/ARCHITECTURE.md §10). The rule: a NaN value leaves the word
-- as it is, bits and all; otherwise the word becomes the float min/max of §3 (a NaN
-- word gives way to the value, -0 is below +0, subnormals kept); the old word is
-- returned; out of bounds nothing happens and the old value reads +0. Checked bit for
-- bit against a model written here, on the reference backend, and (#gpu) between the
-- reference and the CUDA backend, also with thousands of invocations on one word.
local vyre = require("vyre")
local H = require("spec.helpers")

-- ---- bits and the model ----------------------------------------------------------

local SPECIALS = {
  0x00000000, 0x80000000, -- +0, -0
  0x3F800000, 0xBF800000, 0x3F800001, -- 1, -1, 1 + ulp
  0x7F800000, 0xFF800000, -- +inf, -inf
  0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, -- largest, most negative, smallest normal
  0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, -- subnormals
  0x7FC00000, 0xFFC00000, 0x7FFFFFFF, -- quiet NaNs (0x7FFFFFFF: the GPU's own NaN)
  0x7F800001, 0xFF812345, 0x7FC0BEEF, -- signalling NaNs, payloads
}

local function is_nan(b) return b & 0x7F800000 == 0x7F800000 and b & 0x7FFFFF ~= 0 end

-- Non-NaN floats in vyre's order (-0 below +0) as plain integers.
local function key(b)
  if b & 0x80000000 ~= 0 then return ~b & 0xFFFFFFFF end
  return b | 0x80000000
end

local function model(op, old, v)
  if is_nan(v) then return old end
  if is_nan(old) then return v end
  local v_below = key(v) < key(old)
  if op == "min" then return v_below and v or old end
  return v_below and old or v
end

local function f32s(bits)
  local parts = {}
  for i, b in ipairs(bits) do parts[i] = string.pack("<I4", b) end
  return vyre.array("f32", table.concat(parts))
end

local function bits_of(arr)
  local s, out = arr:bytes(), {}
  for i = 1, #arr do out[i] = string.unpack("<I4", s, 4 * i - 3) end
  return out
end

local function hex(b) return ("0x%08X"):format(b) end

-- Asserts two bit lists equal, naming the first element that differs.
local function same_bits(want, got, what)
  assert.are.equal(#want, #got, what .. ": lengths")
  for i = 1, #want do
    if want[i] ~= got[i] then
      error(("%s: element %d: want %s, got %s"):format(what, i, hex(want[i]), hex(got[i])), 2)
    end
  end
end

-- ---- programs ------------------------------------------------------------------------

-- Every pair (word, value) in its own element: m[i] = op(m[i], v[i]), r[i] = old.
local function pairs_program(op, shared)
  if not shared then
    return H.parse(([[
(program f32_atomic_%s (workgroup 64)
  (buffer m f32 read_write)
  (buffer v f32 read)
  (buffer r f32 write)
  (let i (gid x))
  (if (lt i (len m)) (then
    (let old (atomic %s m i (load v i)))
    (store r i old))))]]):format(op, op), "f32 atomic " .. op .. " pairs")
  end
  return H.parse(([[
(program f32_atomic_%s_shared (workgroup 64)
  (buffer m f32 read_write)
  (buffer v f32 read)
  (buffer r f32 write)
  (shared s f32 64)
  (let i (gid x))
  (let l (lid x))
  (store s l (load m i))
  (barrier)
  (let old (atomic %s s l (load v i)))
  (store r i old)
  (barrier)
  (store m i (load s l)))]]):format(op, op), "f32 atomic " .. op .. " pairs, shared")
end

local function pair_inputs()
  local m, v = {}, {}
  for _, a in ipairs(SPECIALS) do
    for _, b in ipairs(SPECIALS) do
      m[#m + 1] = a
      v[#v + 1] = b
    end
  end
  return m, v
end

-- All invocations hit m[i % 4] and their workgroup's s[i % 4]; lane 0..3 of each
-- workgroup then folds s into m[4..7]. No old value is kept, so the output is race
-- free: the final words do not depend on the order the atomics land in.
local function crowd_program(op)
  return H.parse(([[
(program f32_atomic_crowd_%s (workgroup 256)
  (buffer v f32 read)
  (buffer m f32 read_write)
  (shared s f32 4)
  (let i (gid x))
  (let l (lid x))
  (if (lt l 4u32) (then (store s l (load m (add l 8u32)))))
  (barrier)
  (atomic %s m (rem i 4u32) (load v i))
  (atomic %s s (rem i 4u32) (load v i))
  (barrier)
  (if (lt l 4u32) (then (atomic %s m (add l 4u32) (load s l)))))]]):format(op, op, op, op),
    "f32 atomic " .. op .. " crowd")
end

-- A small deterministic generator (xorshift64*).
local function rng(seed)
  local s = seed ~ 0x9E3779B97F4A7C15
  return function()
    s = s ~ (s >> 12); s = s ~ (s << 25); s = s ~ (s >> 27)
    return (s * 0x2545F4914F6CDD1D) >> 1
  end
end

-- n values: specials and random bit patterns of every kind (NaNs only if with_nan).
local function crowd_values(n, seed, with_nan)
  local r, out = rng(seed), {}
  for i = 1, n do
    local b
    repeat
      local x = r()
      if x % 3 == 0 then b = SPECIALS[x % #SPECIALS + 1] else b = (x >> 7) & 0xFFFFFFFF end
    until with_nan or not is_nan(b)
    out[i] = b
  end
  return out
end

-- The final words of crowd_program, from the model.
local function crowd_model(op, vals, init, wg)
  local m = { init[1], init[2], init[3], init[4], init[5], init[6], init[7], init[8],
    init[9], init[10], init[11], init[12] }
  for i = 0, #vals - 1 do m[i % 4 + 1] = model(op, m[i % 4 + 1], vals[i + 1]) end
  for g = 0, #vals // wg - 1 do
    local s = { init[9], init[10], init[11], init[12] }
    for l = 0, wg - 1 do
      local i = g * wg + l
      s[i % 4 + 1] = model(op, s[i % 4 + 1], vals[i + 1])
    end
    for j = 1, 4 do m[4 + j] = model(op, m[4 + j], s[j]) end
  end
  return m
end

local CROWD_INIT = { 0x7F800000, 0xFF800000, 0x7FC0BEEF, 0x80000000,
  0x00000000, 0xFF812345, 0x7F800000, 0xFF800000,
  0x7FC00000, 0x00000001, 0x7F800000, 0xFF800000 }

-- ---- reference backend -------------------------------------------------------------

describe("f32 atomic min/max on the reference backend", function()
  local be = H.ref()

  for _, op in ipairs({ "min", "max" }) do
    for _, shared in ipairs({ false, true }) do
      it(("%s on %s memory: every pair of special values, old values returned")
        :format(op, shared and "shared" or "global"), function()
        local m, v = pair_inputs()
        local out = be:run(pairs_program(op, shared), { m = f32s(m), v = f32s(v) },
          { n = #m })
        local want = {}
        for i = 1, #m do want[i] = model(op, m[i], v[i]) end
        same_bits(want, bits_of(out.m), "new words")
        same_bits(m, bits_of(out.r), "old values")
      end)
    end
  end

  it("spells out the rule on a few words", function()
    local cases = {
      -- op, word, value, new word
      { "min", 0x00000000, 0x80000000, 0x80000000 }, -- -0 below +0, either order
      { "min", 0x80000000, 0x00000000, 0x80000000 },
      { "max", 0x80000000, 0x00000000, 0x00000000 },
      { "max", 0x00000000, 0x80000000, 0x00000000 },
      { "min", 0x3F800000, 0x00000001, 0x00000001 }, -- subnormal kept
      { "max", 0x80000001, 0x807FFFFF, 0x80000001 },
      { "min", 0x7FC00000, 0xBF800000, 0xBF800000 }, -- NaN word: the value
      { "max", 0xBF800000, 0x7FC00000, 0xBF800000 }, -- NaN value: unchanged
      { "min", 0xFF812345, 0x7FC00000, 0xFF812345 }, -- both NaN: the word's own bits
      { "max", 0x7F800001, 0x7FFFFFFF, 0x7F800001 },
    }
    local p = H.parse([[
(program f32_atomic_rule (workgroup 1)
  (buffer m f32 read_write 2)
  (buffer v f32 read 1)
  (let a (atomic min m 0u32 (load v 0u32)))
  (let b (atomic max m 1u32 (load v 0u32))))]], "f32 atomic rule")
    for _, c in ipairs(cases) do
      local out = be:run(p, { m = f32s({ c[2], c[2] }), v = f32s({ c[3] }) }, { grid = { 1 } })
      local got = bits_of(out.m)[c[1] == "min" and 1 or 2]
      assert.are.equal(hex(c[4]), hex(got), ("%s(%s, %s)"):format(c[1], hex(c[2]), hex(c[3])))
    end
  end)

  it("has no effect out of bounds and returns +0 there", function()
    local p = H.parse([[
(program f32_atomic_oob (workgroup 1)
  (buffer m f32 read_write)
  (buffer r f32 write 6)
  (shared s f32 2)
  (store s 0u32 5.0f32)
  (let a (atomic min m 4u32 -1.0f32))
  (let b (atomic max m (len m) 1.0f32))
  (let c (atomic min s 2u32 -1.0f32))
  (let d (atomic max s 4294967295u32 9.0f32))
  (let e (atomic max m 0u32 -0x0p+0f32))
  (store r 0u32 a)
  (store r 1u32 b)
  (store r 2u32 c)
  (store r 3u32 d)
  (store r 4u32 e)
  (store r 5u32 (load s 0u32)))]], "f32 atomic out of bounds")
    local m = { 0x80000000, 0x3F800000, 0x7FC00000, 0x00000001 }
    local out = be:run(p, { m = f32s(m) }, { grid = { 1 } })
    same_bits(m, bits_of(out.m), "words")
    same_bits({ 0, 0, 0, 0, 0x80000000, 0x40A00000 }, bits_of(out.r), "old values")
  end)

  it("leaves the same final words whatever the order of many invocations", function()
    for _, op in ipairs({ "min", "max" }) do
      local p = crowd_program(op)
      for _, with_nan in ipairs({ true, false }) do
        local vals = crowd_values(1024, with_nan and 7 or 8, with_nan)
        local want = crowd_model(op, vals, CROWD_INIT, 256)
        -- the interpreter runs invocations in one order; reversing the inputs
        -- regroups and reorders every word's atomics
        local rev = {}
        for i = 1, #vals do rev[i] = vals[#vals + 1 - i] end
        for _, vs in ipairs({ vals, rev }) do
          local out = be:run(p, { v = f32s(vs), m = f32s(CROWD_INIT) }, { n = #vs })
          local got = bits_of(out.m)
          same_bits({ table.unpack(want, 1, 8) }, { table.unpack(got, 1, 8) }, op .. " crowd")
        end
      end
    end
  end)

  it("validates f32 min and max, and keeps the other ops integer-only", function()
    local ok = vyre.validate(vyre.parse([[
(program t (workgroup 1)
  (buffer g f32 read_write)
  (shared s f32 4)
  (let a (atomic min g 0u32 1.0f32))
  (let b (atomic max s 1u32 a))
  (set b 2.0f32))]]))
    assert.is_true(ok)
    for _, op in ipairs({ "sub", "and", "or", "xor", "exchange" }) do
      local good, _, msg = vyre.validate(vyre.parse(([[
(program t (workgroup 1) (buffer g f32 read_write) (atomic %s g 0u32 1.0f32))]]):format(op)))
      assert.is_false(good)
      assert.matches("atomic " .. op .. " on f32 is not supported", msg, 1, true)
      assert.matches("f32 supports only add, min and max", msg, 1, true)
    end
  end)

  it("is what k:atomic builds in the DSL", function()
    local p = vyre.program("dsl_f32_min", { workgroup = 64,
      vyre.buffer("m", "f32", "read_write"), vyre.buffer("v", "f32", "read"),
      vyre.buffer("r", "f32", "write") },
      function(k)
        local i = k:let("i", k.gid.x)
        k:when(i:lt(k.m:len()), function()
          local old = k:let("old", k:atomic("max", k.m, i, k.v[i]))
          k.r[i] = old
        end)
      end)
    assert.matches("(let old (atomic max m i (load v i)))", p:text(), 1, true)
    local out = be:run(p, { m = { -1.0, 2.0, 0.0 }, v = { 3.0, -4.0, -0.0 } })
    assert.are.same({ 3.0, 2.0, 0.0 }, out.m:totable())
    assert.are.same({ -1.0, 2.0, 0.0 }, out.r:totable())
    assert.are.equal(0, bits_of(out.m)[3]) -- +0 stays: max(+0, -0) = +0
  end)
end)

-- ---- the CUDA backend, bit for bit ------------------------------------------------------

describe("f32 atomic min/max on the GPU, bit for bit with the reference #gpu", function()
  local ref, gpu

  setup(function()
    ref = vyre.backend("reference")
    gpu = assert(require("vyre.cuda").device(0))
  end)

  for _, op in ipairs({ "min", "max" }) do
    for _, shared in ipairs({ false, true }) do
      it(("%s on %s memory: every pair of special values"):format(op,
        shared and "shared" or "global"), function()
        local p = pairs_program(op, shared)
        local m, v = pair_inputs()
        local args = { m = f32s(m), v = f32s(v) }
        local want = ref:run(p, args, { n = #m })
        local got = gpu:run(p, args, { n = #m })
        -- no NaN allowance: words and old values match bit for bit
        same_bits(bits_of(want.m), bits_of(got.m), "new words")
        same_bits(bits_of(want.r), bits_of(got.r), "old values")
        local model_m = {}
        for i = 1, #m do model_m[i] = model(op, m[i], v[i]) end
        same_bits(model_m, bits_of(got.m), "new words against the model")
      end)
    end
  end

  it("leaves the model's final words with 65536 invocations on 4 words", function()
    for _, op in ipairs({ "min", "max" }) do
      local p = crowd_program(op)
      for _, with_nan in ipairs({ true, false }) do
        for seed = 1, 3 do
          local vals = crowd_values(65536, seed * 2 + (with_nan and 1 or 0), with_nan)
          local args = { v = f32s(vals), m = f32s(CROWD_INIT) }
          local want = crowd_model(op, vals, CROWD_INIT, 256)
          local r = bits_of(ref:run(p, args, { n = #vals }).m)
          local g = bits_of(gpu:run(p, args, { n = #vals }).m)
          same_bits({ table.unpack(want, 1, 8) }, { table.unpack(r, 1, 8) }, "reference")
          same_bits({ table.unpack(r, 1, 8) }, { table.unpack(g, 1, 8) }, op .. " gpu")
        end
      end
    end
  end)

  it("returns old values that are words the crowd could have seen", function()
    -- Old values depend on the order, so they are not compared with the reference;
    -- each must be the initial word or one of the values, and for min (max) no
    -- non-NaN old value lies below (above) the final word.
    local p = vyre.parse([[
(program f32_atomic_olds (workgroup 256)
  (buffer v f32 read)
  (buffer m f32 read_write 2)
  (buffer r f32 write)
  (let i (gid x))
  (let a (atomic min m 0u32 (load v i)))
  (let b (atomic max m 1u32 (load v i)))
  (store r (mul i 2u32) a)
  (store r (add (mul i 2u32) 1u32) b))]])
    local vals = crowd_values(16384, 99, true)
    local init = { 0x7FC0BEEF, 0xFF812345 }
    local out = gpu:run(p, { v = f32s(vals), m = f32s(init), r = vyre.array("f32", 2 * #vals) },
      { n = #vals })
    local m, r = bits_of(out.m), bits_of(out.r)
    local seen = { [init[1]] = true, [init[2]] = true }
    for _, b in ipairs(vals) do seen[b] = true end
    local fin = { init[1], init[2] }
    for _, b in ipairs(vals) do
      fin[1] = model("min", fin[1], b)
      fin[2] = model("max", fin[2], b)
    end
    same_bits(fin, m, "final words")
    for i = 1, #r do
      local w = (i - 1) % 2 + 1
      assert.is_true(seen[r[i]] == true, "old value " .. hex(r[i]) .. " never existed")
      if not is_nan(r[i]) and not is_nan(m[w]) then
        if w == 1 then
          assert.is_true(key(r[i]) >= key(m[w]), "min went back up")
        else
          assert.is_true(key(r[i]) <= key(m[w]), "max went back down")
        end
      end
    end
  end)
end)
