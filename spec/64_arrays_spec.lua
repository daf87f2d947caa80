-- 64: array and buffer niceties: __tostring with the first and last elements, the bulk
-- conversion from Lua tables (same values and errors as element by element), fill,
-- iota, seeded random fill, raw bytes in and out, and element ranges for
-- buf:upload/buf:download on both backends.
local vyre = require("vyre")
local pretty = require("vyre.cli.pretty")

local TYPES = { "bool", "i32", "u32", "i64", "u64", "f32", "f64" }

local function values_for(t, n)
  local v = {}
  for i = 1, n do
    if t == "bool" then v[i] = i % 3 == 0
    elseif t == "f32" or t == "f64" then v[i] = (i - n / 2) * 0.375
    elseif t == "u32" or t == "u64" then v[i] = i * 7919
    else v[i] = (i - n // 2) * 7919 end
  end
  return v
end

describe("tostring of an Array", function()
  it("shows the type, the length and every element of a short array", function()
    assert.are.equal("vyre.Array(f32, 3) [1.0, 2.5, -3.0]",
      tostring(vyre.array("f32", { 1, 2.5, -3 })))
    assert.are.equal("vyre.Array(bool, 2) [true, false]", tostring(vyre.array("bool",
      { true, false })))
    assert.are.equal("vyre.Array(i64, 0) []", tostring(vyre.array("i64", 0)))
    assert.are.equal("vyre.Array(u64, 2) [18446744073709551615, 0]",
      tostring(vyre.array("u64", { -1, 0 })))
    -- the quiet NaN by its bits: 0/0's sign is the CPU's (negative on x86), and the
    -- sign prints (spec/78)
    local nan = string.unpack("<d", string.pack("<i8", 0x7ff8000000000000))
    assert.are.equal("vyre.Array(f64, 5) [0.1, nan, -nan, inf, -inf]",
      tostring(vyre.array("f64", { 0.1, nan, -nan, math.huge, -math.huge })))
  end)

  it("shows the first 8 and the last 4 elements of a long one", function()
    local a = vyre.array("i32", 1000):iota(1)
    assert.are.equal("vyre.Array(i32, 1000) [1, 2, 3, 4, 5, 6, 7, 8, …, 997, 998, 999, 1000]",
      tostring(a))
    assert.are.equal("vyre.Array(i32, 12) [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]",
      tostring(vyre.array("i32", 12):iota(1)))
  end)

  it("prints floats as the shortest text that reads back the same", function()
    local a = vyre.array("f32", { 0.1, 1 / 3, 16777217, 1e-45, 3.4e38 })
    assert.are.equal("vyre.Array(f32, 5) [0.1, 0.33333334, 16777216.0, 1e-45, 3.4e+38]",
      tostring(a))
    local d = vyre.array("f64", { 0.1, 1 / 3, 2 ^ 53 + 1 })
    assert.are.equal("vyre.Array(f64, 3) [0.1, 0.3333333333333333, 9007199254740992.0]",
      tostring(d))
  end)

  it("agrees with the REPL's printer for every type", function()
    for _, t in ipairs(TYPES) do
      for _, n in ipairs({ 0, 5, 40 }) do
        local a = vyre.array(t, values_for(t, n))
        assert.are.equal(pretty(a), tostring(a), t .. " " .. n)
      end
    end
  end)
end)

describe("converting Lua tables", function()
  it("gives the same elements as assigning them one by one, for every type", function()
    for _, t in ipairs(TYPES) do
      local v = values_for(t, 1000)
      local bulk, one = vyre.array(t, v), vyre.array(t, #v)
      for i = 1, #v do one[i] = v[i] end
      assert.is_true(bulk == one, t)
    end
  end)

  it("still takes exact floats for integers and rejects bad elements by index", function()
    assert.are.same({ 2, 3 }, vyre.array("i32", { 2.0, 3 }):totable())
    assert.are.same({ math.mininteger }, vyre.array("u64", { 2.0 ^ 63 }):totable())
    local function err(t, v)
      local ok, e = pcall(vyre.array, t, v)
      assert.is_false(ok)
      return e
    end
    assert.matches("vyre.array: element [3] = 4294967296 is out of range for u32",
      err("u32", { 1, 2, 2 ^ 32 | 0 }), 1, true)
    assert.matches("vyre.array: element [2] = 2.5 is not an exact integer",
      err("i32", { 1, 2.5 }), 1, true)
    assert.matches("vyre.array: element [1] must be a boolean", err("bool", { 1 }), 1, true)
    assert.matches("vyre.array: element [2] must be a number for type f32 (got string)",
      err("f32", { 1, "x" }), 1, true)
    assert.matches("element [2] must be a number", err("f64", { 1, nil, 3 }), 1, true)
  end)

  it("converts tables given to be:buffer, buf:upload and be:run the same way", function()
    local be = vyre.backend("reference")
    local v = values_for("f32", 100)
    assert.is_true(be:buffer("f32", v):download() == vyre.array("f32", v))
    local b = be:buffer("f32", 100)
    b:upload(v)
    assert.is_true(b:download() == vyre.array("f32", v))
    local ok, e = pcall(b.upload, b, { 1, true })
    assert.is_false(ok)
    assert.matches("vyre.Buffer:upload: element [2] must be a number", e, 1, true)
  end)
end)

describe("fill, iota, random and from_string", function()
  it("fill sets every element and returns the array", function()
    local a = vyre.array("u32", 5)
    assert.are.equal(a, a:fill(7))
    assert.are.same({ 7, 7, 7, 7, 7 }, a:totable())
    assert.are.same({ true, true }, vyre.array("bool", 2):fill(true):totable())
    assert.is_false(pcall(a.fill, a, -1))
  end)

  it("iota computes start + (i - 1) * step in the element type, as vyre.lib.iota", function()
    assert.are.same({ 0, 1, 2, 3 }, vyre.array("i32", 4):iota():totable())
    assert.are.same({ 10, 7, 4, 1 }, vyre.array("i32", 4):iota(10, -3):totable())
    assert.are.same({ 4294967295, 0, 1 }, vyre.array("u32", 3):iota(4294967295):totable())
    local lib = require("vyre.lib")
    local be = vyre.backend("reference")
    for _, case in ipairs({ { "f32", 0.1, 0.3 }, { "f64", -2.5, 1 / 3 }, { "i32", 5, -7 },
      { "u64", -3, 5 }, { "i64", 1, 1 << 40 } }) do
      local t, start, step = case[1], case[2], case[3]
      local want = lib.iota(be, be:buffer(t, 3000), start, step):download()
      assert.is_true(vyre.array(t, 3000):iota(start, step) == want, t)
    end
    assert.matches("a bool array has no sequence",
      select(2, pcall(vyre.array("bool", 1).iota, vyre.array("bool", 1))), 1, true)
  end)

  it("random is deterministic for a seed and stays in its range", function()
    for _, t in ipairs(TYPES) do
      local a, b = vyre.array(t, 200):random(42), vyre.array(t, 200):random(42)
      assert.is_true(a == b, t)
      assert.is_false(a == vyre.array(t, 200):random(43), t)
    end
    local f = vyre.array("f32", 10000):random(1, -2, 2)
    local lo, hi, sum = math.huge, -math.huge, 0
    for _, x in ipairs(f) do
      lo, hi, sum = math.min(lo, x), math.max(hi, x), sum + x
    end
    assert.is_true(lo >= -2 and hi < 2 and lo < -1.99 and hi > 1.99)
    assert.is_true(math.abs(sum / #f) < 0.1)
    local d = vyre.array("f64", 1000):random(9)
    for _, x in ipairs(d) do assert.is_true(x >= 0 and x < 1) end
    local seen = {}
    for _, x in ipairs(vyre.array("i32", 1000):random(5, -3, 3)) do
      assert.is_true(x >= -3 and x <= 3)
      seen[x] = true
    end
    for x = -3, 3 do assert.is_true(seen[x], "value " .. x .. " never drawn") end
    local coins = 0
    for _, x in ipairs(vyre.array("bool", 1000):random(3)) do coins = coins + (x and 1 or 0) end
    assert.is_true(coins > 400 and coins < 600)
    -- the documented generator: splitmix64 from the seed, one draw per element
    assert.are.same({ 0xe220a8397b1dcdaf }, vyre.array("u64", 1):random(0):totable())
  end)

  it("random rejects an empty or inverted range", function()
    local a = vyre.array("f32", 2)
    assert.matches("is empty or not finite", select(2, pcall(a.random, a, 1, 2, 2)), 1, true)
    local i = vyre.array("u32", 2)
    assert.matches("lo is above hi", select(2, pcall(i.random, i, 1, 9, 3)), 1, true)
    local b = vyre.array("bool", 2)
    assert.matches("takes no range", select(2, pcall(b.random, b, 1, 0, 1)), 1, true)
  end)

  it("from_string and tostring move raw bytes in place", function()
    local a = vyre.array("i32", 4)
    assert.are.equal(a, a:from_string(string.pack("<i4i4", -7, 9), 2))
    assert.are.same({ 0, -7, 9, 0 }, a:totable())
    assert.are.equal(string.pack("<i4i4i4i4", 0, -7, 9, 0), a:bytes())
    local b = vyre.array("bool", 2):from_string(string.pack("<I4I4", 0, 5))
    assert.are.equal(string.pack("<I4I4", 0, 1), b:bytes()) -- bools stay 0/1 words
    assert.matches("are not a whole number of i32 elements",
      select(2, pcall(a.from_string, a, "abc")), 1, true)
    assert.matches("do not fit the 4 held",
      select(2, pcall(a.from_string, a, string.pack("<i4i4", 1, 2), 4)), 1, true)
  end)
end)

-- The element-range forms on one backend.
local function ranges(be)
  local b = be:buffer("i32", 6)
  b:upload({ 1, 2, 3 }, { first = 3 })
  assert.are.same({ 0, 0, 1, 2, 3, 0 }, b:download():totable())
  assert.are.same({ 1, 2 }, b:download({ first = 3, count = 2 }):totable())
  assert.are.same({ 2, 3, 0 }, b:download({ first = 4 }):totable())
  assert.are.same({ 0 }, b:download({ count = 1 }):totable())
  assert.are.same({}, b:download({ first = 7 }):totable())
  b:upload(string.pack("<i4i4", -5, -6), { first = 5 })
  assert.are.same({ 0, 0, 1, 2, -5, -6 }, b:download():totable())
  assert.are.same({ 1, 2 }, b:download({ byte_offset = 8, nbytes = 8 }):totable()) -- bytes by name
  local function err(fn, ...)
    local ok, e = pcall(fn, b, ...)
    assert.is_false(ok)
    return e
  end
  assert.matches("vyre.Buffer:download: elements 6..7 are outside the 6 held",
    err(b.download, { first = 6, count = 2 }), 1, true)
  assert.matches("vyre.Buffer:upload: elements 6..7 are outside the 6 held",
    err(b.upload, { 1, 2 }, { first = 6 }), 1, true)
  assert.matches("first = 8 is past the end", err(b.download, { first = 8 }), 1, true)
  assert.matches("unknown range key 'frist'", err(b.download, { frist = 1 }), 1, true)
  assert.matches("unknown range key 'count'. Fix: use {first = i} (elements, 1-based), or bytes "
    .. "by name {byte_offset = o}",
    err(b.upload, { 1 }, { count = 1 }), 1, true)
  assert.matches("first must be an integer >= 1 (got 0)", err(b.upload, { 1 }, { first = 0 }),
    1, true)
  assert.matches("3 bytes are not whole i32 elements", err(b.upload, "abc"), 1, true)
  local bools = be:buffer("bool", 2)
  bools:upload(string.pack("<I4I4", 5, 0))
  assert.are.same({ true, false }, bools:download():totable())
  assert.are.equal(string.pack("<I4I4", 1, 0), bools:download():bytes())
end

describe("element ranges of buf:upload and buf:download", function()
  it("work on the reference backend", function()
    ranges(vyre.backend("reference"))
  end)

  it("work on CUDA the same way #gpu", function()
    ranges(assert(vyre.backend("cuda")))
  end)
end)
