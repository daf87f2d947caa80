-- 77: floats print as the shortest text that reads back to the same bits (issue 20 §4):
-- tostring(array), the REPL's printer and `vyre run` share one formatter (larray.c,
-- core.element_text / core.float_text). Thousands of bit patterns of f32 and f64
-- (normals, subnormals, the extremes, zeros and NaNs of both signs with payloads)
-- round-trip through the text and the CLI's reader; each text is the shortest that does.
local vyre = require("vyre.cuda")
local C = require("vyre.cli.common")
local pretty = require("vyre.cli.pretty")
local repl = require("vyre.cli.repl")

local core = vyre.core
local FMT = { f32 = "<I4", f64 = "<i8" }

local function from_bits(t, bits)
  return vyre.array(t, 1):from_string(string.pack(FMT[t], bits))
end

-- A deterministic stream of 64-bit patterns (xorshift64*).
local function patterns(seed)
  local x = seed
  return function()
    x = x ~ (x >> 12); x = x ~ (x << 25); x = x ~ (x >> 27)
    return x * 0x2545F4914F6CDD1D
  end
end

local SPECIAL = {
  f32 = { 0, 0x80000000, 1, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff,
    0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7fc00001, 0xffc00001, 0x7f800001,
    0x7fffffff, 0xffffffff, 0x3f800000, 0x3dcccccd, 0x41200000, 0x4b800000 },
  f64 = { 0, 0x8000000000000000, 1, 0x8000000000000001, 0x000fffffffffffff,
    0x0010000000000000, 0x7fefffffffffffff, 0xffefffffffffffff, 0x7ff0000000000000,
    0xfff0000000000000, 0x7ff8000000000000, 0xfff8000000000000, 0x7ff8000000000001,
    0x7ff0000000000001, 0x7fffffffffffffff, -1, 0x3fb999999999999a, 0x4024000000000000 },
}

local function is_nan_bits(t, bits)
  if t == "f32" then return bits & 0x7f800000 == 0x7f800000 and bits & 0x7fffff ~= 0 end
  return bits & 0x7ff0000000000000 == 0x7ff0000000000000 and bits & 0xfffffffffffff ~= 0
end

-- The bits the text reads back to through the CLI's reader and an Array store.
local function read_back(t, text)
  local v, why = C.parse_value(text, t)
  assert(v ~= nil, ("%s %q does not read back: %s"):format(t, text, tostring(why)))
  return (string.unpack(FMT[t], vyre.array(t, { v }):bytes())) & (t == "f32" and
    0xffffffff or -1)
end

-- Significant digits of a positional or exponent text; nil for inf/nan.
local function digits(text)
  local m = text:match("^%-?([%d%.]+)")
  if not m then return nil end
  return (m:gsub("%.", ""):gsub("^0+", ""):gsub("0+$", ""))
end

local function check(t, bits)
  local a = from_bits(t, bits)
  local text = core.element_text(a, 1)
  assert.are.equal("vyre.Array(" .. t .. ", 1) [" .. text .. "]", tostring(a))
  if is_nan_bits(t, bits) then
    local quiet = t == "f32" and 0x7fc00000 or 0x7ff8000000000000
    local sign = t == "f32" and 0x80000000 or math.mininteger
    if bits & ~sign == quiet then
      assert.are.equal(bits & sign ~= 0 and "-nan" or "nan", text)
    else
      assert.are.equal((t == "f32" and "nan:0x%08x" or "nan:0x%016x"):format(bits), text)
    end
    -- an f32 signalling NaN cannot pass through a Lua number (the conversion to double
    -- quiets it), so only its text names its bits; every other NaN reads back exactly
    if t == "f32" and bits & 0x00400000 == 0 then return text end
  else
    assert.truthy(text:find("[%.en]"), t .. " " .. text .. " does not read as a float")
  end
  assert.are.equal(bits, read_back(t, text), ("%s 0x%x printed %q"):format(t, bits, text))
  -- shortest: one significant digit fewer reads back to other bits
  local d = digits(text)
  if d and #d > 1 then
    local v = string.unpack(t == "f32" and "<f" or "<d", string.pack(FMT[t], bits))
    local shorter = ("%." .. (#d - 2) .. "e"):format(v)
    -- (a shorter text past the type's range, as for the largest finite value, is refused
    -- by the reader: that too is not these bits)
    if C.parse_value(shorter, t) ~= nil then
      assert.are_not.equal(bits, read_back(t, shorter), ("%s %q is not the shortest (%q)")
        :format(t, text, shorter))
    end
  end
  return text
end

describe("float text", function()
  it("prints the examples as the issue asks", function()
    assert.are.equal("vyre.Array(f64, 6) [10.0, 0.1, -0.0, inf, -inf, 100000.0]",
      tostring(vyre.array("f64", { 10, 0.1, -0.0, 1 / 0, -1 / 0, 1e5 })))
    assert.are.equal("vyre.Array(f32, 4) [0.1, 10.0, 1e-45, 3.4028235e+38]",
      tostring(vyre.array("f32", { 0.1, 10, 1e-45, 3.4028234663852886e38 })))
    assert.are.equal("vyre.Array(f64, 3) [5e-324, 1.7976931348623157e+308, 1e+17]",
      tostring(vyre.array("f64", { 5e-324, 1.7976931348623157e308, 1e17 })))
    assert.are.equal("nan", core.element_text(from_bits("f32", 0x7fc00000), 1))
    assert.are.equal("-nan", core.element_text(from_bits("f32", 0xffc00000), 1))
    assert.are.equal("-nan", core.element_text(from_bits("f64", 0xfff8000000000000), 1))
    assert.are.equal("0.1", core.float_text(0.1, "f32"))
    assert.are.equal("0.10000000149011612", core.float_text((string.unpack("<f",
      string.pack("<f", 0.1)))))
    assert.are.equal("0.00001", core.float_text(1e-5))
    assert.are.equal("1e-6", core.float_text(1e-6))
    assert.are.equal("9007199254740992.0", core.float_text(2.0 ^ 53))
    assert.matches("type must be 'f32' or 'f64'.*Fix:", select(2, pcall(core.float_text, 1,
      "f16")))
  end)

  for _, t in ipairs({ "f32", "f64" }) do
    it("round-trips " .. t .. " bits through the shortest text", function()
      local n = 0
      for _, bits in ipairs(SPECIAL[t]) do
        check(t, bits)
        n = n + 1
      end
      local next_bits = patterns(t == "f32" and 0x9e3779b97f4a7c15 or 0x2545f4914f6cdd1d)
      for i = 1, 3000 do
        local bits = next_bits()
        if t == "f32" then bits = bits & 0xffffffff end
        -- a third of them subnormal or tiny, where the digit counts are hardest
        if i % 3 == 0 then
          bits = t == "f32" and (bits & 0x80ffffff) or (bits & 0x801fffffffffffff)
        end
        check(t, bits)
        n = n + 1
      end
      assert.is_true(n > 3000)
    end)
  end

  it("is the same text in tostring, the REPL, the pretty printer and vyre run", function()
    local a = vyre.array("f32", { 10, 0.1, -0.0, 1e-45 })
    local want = "vyre.Array(f32, 4) [10.0, 0.1, -0.0, 1e-45]"
    assert.are.equal(want, tostring(a))
    assert.are.equal(want, pretty.array(a))
    assert.are.equal(want .. "\n", repl.eval({ "vyre.array('f32', {10, 0.1, -0.0, 1e-45})" }))
    assert.are.equal("10.0\t0.1\t1e+300\n", repl.eval({ "10.0, 0.1, 1e300" }))
    assert.are.equal("{10.0, -0.0}\n", repl.eval({ "{10.0, -0.0}" }))
    local run = require("vyre.cli.run")
    local lines = {}
    local p = vyre.parse("(program w (workgroup 1) (buffer f f32 read_write) "
      .. "(buffer d f64 read_write))")
    run.print_results({ out = function(s) lines[#lines + 1] = s end }, p,
      { f = vyre.array("f32", { 10, 0.1 }), d = vyre.array("f64", { -0.0, 1e21 }) })
    assert.are.same({ "f = vyre.Array(f32, 2) [10.0, 0.1]\n",
      "d = vyre.Array(f64, 2) [-0.0, 1e+21]\n" }, lines)
  end)

  it("reads back -nan and nan:0xBITS in the CLI, refusing bits that are no NaN", function()
    assert.are.equal(0xffc00000, read_back("f32", "-nan"))
    assert.are.equal(0x7fc00000, read_back("f32", "nan"))
    assert.are.equal(0x7fc00001, read_back("f32", "nan:0x7fc00001"))
    assert.are.equal(0x7ff8000000000001, read_back("f64", "nan:0x7ff8000000000001"))
    local v, why = C.parse_value("nan:0x3f800000", "f32")
    assert.is_nil(v)
    assert.matches("is not a NaN of f32", why)
  end)
end)
