-- 01: vyre.Array — host arrays of the 7 types and the §7 value conventions.
local vyre = require("vyre")
local H = require("spec.helpers")

describe("vyre.array", function()
  it("creates zero-filled arrays of every type from a count", function()
    local zero = { bool = false, i32 = 0, u32 = 0, i64 = 0, u64 = 0, f32 = 0.0, f64 = 0.0 }
    for _, t in ipairs(vyre.types) do
      local a = vyre.array(t, 3)
      assert.are.equal(3, #a)
      assert.are.equal(t, a.type)
      assert.are.equal(3, a.count)
      for i = 1, 3 do assert.are.equal(zero[t], a[i]) end
    end
    assert.are.same({ "bool", "i32", "u32", "i64", "u64", "f32", "f64" }, vyre.types)
  end)

  it("creates arrays from tables, 1-based", function()
    local a = vyre.array("i32", { 5, -6, 7 })
    assert.are.equal(5, a[1])
    assert.are.equal(-6, a[2])
    assert.are.equal(7, a[3])
    assert.are.same({ 5, -6, 7 }, a:totable())
    assert.are.same({ true, false, true }, vyre.array("bool", { true, false, true }):totable())
    assert.are.same({ 1.5, -2.25 }, vyre.array("f64", { 1.5, -2.25 }):totable())
  end)

  it("returns integers as Lua integers and floats as Lua floats", function()
    assert.are.equal("integer", math.type(vyre.array("u32", { 4 })[1]))
    assert.are.equal("integer", math.type(vyre.array("i64", { 4 })[1]))
    assert.are.equal("float", math.type(vyre.array("f32", { 4 })[1]))
    assert.are.equal("float", math.type(vyre.array("f64", { 4 })[1]))
  end)

  it("creates arrays from binary strings and returns raw bytes with tostring", function()
    local s = string.pack("<i4i4i4", 1, -2, 3)
    local a = vyre.array("i32", s)
    assert.are.same({ 1, -2, 3 }, a:totable())
    assert.are.equal(s, a:bytes())
    local f = vyre.array("f32", { 1.5, -0.5 })
    assert.are.equal(string.pack("<ff", 1.5, -0.5), f:bytes())
    local d = vyre.array("f64", { 0.1 })
    assert.are.equal(string.pack("<d", 0.1), d:bytes())
    assert.are.equal(string.pack("<I4I4", 1, 0), vyre.array("bool", { true, false }):bytes())
    assert.are.equal("", vyre.array("u64", 0):bytes())
  end)

  it("reads any nonzero bool word from a binary string as true, stored as 1", function()
    local a = vyre.array("bool", string.pack("<I4I4I4", 0, 5, 0xFFFFFFFF))
    assert.are.same({ false, true, true }, a:totable())
    assert.are.equal(string.pack("<I4I4I4", 0, 1, 1), a:bytes())
  end)

  it("rejects binary strings that are not whole elements", function()
    local msg = H.error_of(vyre.array, "f64", "abc")
    assert.matches("vyre.array: a binary string of 3 bytes is not a whole number of f64", msg,
      1, true)
    assert.matches("Fix:", msg, 1, true)
  end)

  it("writes elements with __newindex", function()
    local a = vyre.array("u32", 2)
    a[1] = 7
    a[2] = 4294967295
    assert.are.same({ 7, 4294967295 }, a:totable())
  end)

  it("raises index errors that name the valid range", function()
    local a = vyre.array("f32", 3)
    assert.matches("index 0 is out of range (valid indices are 1..3)", H.error_of(function()
      return a[0]
    end), 1, true)
    assert.matches("index 4 is out of range (valid indices are 1..3)", H.error_of(function()
      a[4] = 1
    end), 1, true)
    assert.matches("index 1.5 is not an integer", H.error_of(function() return a[1.5] end),
      1, true)
    assert.matches("the array is empty", H.error_of(function()
      return vyre.array("f32", 0)[2]
    end), 1, true)
    assert.matches("index 5 is out of range (valid indices are 1..3)", H.error_of(function()
      return a[5]
    end), 1, true)
  end)

  it("reads nil one past the end, so ipairs stops there, and pairs walks the elements", function()
    local a = vyre.array("i32", { 5, -6, 7 })
    assert.is_nil(a[4])
    assert.is_nil(vyre.array("f32", 0)[1])
    local seen = {}
    for i, v in ipairs(a) do seen[#seen + 1] = i .. "=" .. v end
    assert.are.same({ "1=5", "2=-6", "3=7" }, seen)
    seen = {}
    for i, v in pairs(a) do seen[#seen + 1] = i .. "=" .. v end
    assert.are.same({ "1=5", "2=-6", "3=7" }, seen)
    for _ in pairs(vyre.array("u32", 0)) do error("an empty array has no elements") end
    a:free()
    assert.matches("was freed", H.error_of(function() for _ in pairs(a) do end end), 1, true)
  end)

  it("range-checks i32 and u32 instead of wrapping", function()
    assert.are.equal(-2147483648, vyre.array("i32", { -2147483648 })[1])
    assert.are.equal(2147483647, vyre.array("i32", { 2147483647 })[1])
    assert.matches("2147483648 is out of range for i32 (-2147483648..2147483647)",
      H.error_of(vyre.array, "i32", { 2147483648 }), 1, true)
    assert.matches("-1 is out of range for u32 (0..4294967295)",
      H.error_of(vyre.array, "u32", { -1 }), 1, true)
    assert.matches("4294967296 is out of range for u32",
      H.error_of(vyre.array, "u32", { 4294967296 }), 1, true)
    local a = vyre.array("i32", 1)
    assert.matches("vyre.Array: element [1] = 2147483648 is out of range",
      H.error_of(function() a[1] = 2147483648 end), 1, true)
  end)

  it("accepts floats for integer types only when they are exact integers", function()
    assert.are.equal(2, vyre.array("i64", { 2.0 })[1])
    assert.are.equal("integer", math.type(vyre.array("i64", { 2.0 })[1]))
    local msg = H.error_of(vyre.array, "i64", { 1, 2.5 })
    assert.matches("vyre.array: element [2] = 2.5 is not an exact integer, so it cannot be a i64",
      msg, 1, true)
    assert.matches("Fix:", msg, 1, true)
    assert.matches("not an exact integer", H.error_of(vyre.array, "u32", { 0 / 0 }), 1, true)
    assert.matches("out of range for i64", H.error_of(vyre.array, "i64", { 1e19 }), 1, true)
  end)

  it("maps u64 to Lua integers with the same 64 bits", function()
    local a = vyre.array("u64", { -1, math.mininteger, 5 })
    assert.are.equal(string.pack("<I8I8I8", 0xFFFFFFFFFFFFFFFF, 0x8000000000000000, 5),
      a:bytes())
    assert.are.equal(-1, a[1])
    assert.is_true(math.ult(5, a[2]))
    -- a float 2^63 is an exact u64 value; it reads back as the negative integer
    assert.are.equal(math.mininteger, vyre.array("u64", { 2.0 ^ 63 })[1])
    local b = vyre.array("u64", string.pack("<I8", 0xFFFFFFFFFFFFFFFF))
    assert.are.equal(-1, b[1])
  end)

  it("maps bool to Lua booleans only", function()
    local a = vyre.array("bool", 2)
    a[2] = true
    assert.are.same({ false, true }, a:totable())
    assert.matches("element [1] must be a boolean for type bool (got number)",
      H.error_of(vyre.array, "bool", { 1 }), 1, true)
  end)

  it("rounds f32 stores to float and keeps f64 exact", function()
    local a = vyre.array("f32", { 0.1, 16777217 })
    assert.are.equal(H.f32(0.1), a[1])
    assert.are_not.equal(0.1, a[1])
    assert.are.equal(16777216.0, a[2])
    assert.are.equal(0.1, vyre.array("f64", { 0.1 })[1])
    local inf = vyre.array("f32", { 1e39, -1 / 0 })
    assert.are.equal(math.huge, inf[1])
    assert.are.equal(-math.huge, inf[2])
    local nan = vyre.array("f64", { 0 / 0 })[1]
    assert.is_true(nan ~= nan)
  end)

  it("rejects non-numbers for numeric types and unknown types", function()
    assert.matches("element [1] must be a number for type f32 (got string)",
      H.error_of(vyre.array, "f32", { "1" }), 1, true)
    assert.matches("vyre.array: unknown type f16. Fix: use one of bool, i32, u32, i64, u64, "
      .. "f32, f64", H.error_of(vyre.array, "f16", 3), 1, true)
    assert.matches("expected an element count, a table or a binary string",
      H.error_of(vyre.array, "f32", true), 1, true)
    assert.matches("size -1 is not a non-negative integer", H.error_of(vyre.array, "f32", -1),
      1, true)
  end)

  it("compares arrays by type and contents", function()
    assert.are.equal(vyre.array("u32", { 1, 2 }), vyre.array("u32", { 1, 2 }))
    assert.are_not.equal(vyre.array("u32", { 1, 2 }), vyre.array("i32", { 1, 2 }))
    assert.are_not.equal(vyre.array("u32", { 1, 2 }), vyre.array("u32", { 1, 3 }))
  end)

  it("copies independently", function()
    local a = vyre.array("f64", { 1, 2 })
    local b = a:copy()
    b[1] = 9
    assert.are.equal(1.0, a[1])
    assert.are.equal(9.0, b[1])
  end)

  it("has a descriptive __tostring and a named metatable", function()
    local a = vyre.array("f32", 3)
    assert.matches("^vyre%.Array%(f32, 3%)", tostring(a))
    assert.are.equal("vyre.Array", getmetatable(a).__name)
  end)
end)
