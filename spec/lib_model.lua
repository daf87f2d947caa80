-- lib_model.lua — Lua models of vyre's element types for the vyre.lib specs (17, 86):
-- f32 rounding, the float min/max of ARCHITECTURE.md §3 (NaN gives way, -0 < +0),
-- wrapping integer add, the identities vyre.lib uses, and bit-exact comparison.
local M = {}

function M.f32(x)
  return (string.unpack("<f", string.pack("<f", x)))
end

M.NAN = 0 / 0
function M.isnan(x) return x ~= x end

function M.fmin(a, b)
  if M.isnan(a) then return b end
  if M.isnan(b) then return a end
  if a == 0 and b == 0 then return (1 / a < 0) and a or b end
  return a < b and a or b
end

function M.fmax(a, b)
  if M.isnan(a) then return b end
  if M.isnan(b) then return a end
  if a == 0 and b == 0 then return (1 / a > 0) and a or b end
  return a > b and a or b
end

function M.wrap_i32(v) return ((v + 0x80000000) & 0xffffffff) - 0x80000000 end

M.OPS = {
  i32 = { add = function(a, b) return M.wrap_i32(a + b) end, min = math.min, max = math.max },
  u32 = { add = function(a, b) return (a + b) & 0xffffffff end, min = math.min,
    max = math.max },
  i64 = { add = function(a, b) return a + b end, min = math.min, max = math.max },
  u64 = { add = function(a, b) return a + b end,
    min = function(a, b) return math.ult(b, a) and b or a end,
    max = function(a, b) return math.ult(a, b) and b or a end },
  f32 = { add = function(a, b) return M.f32(a + b) end, min = M.fmin, max = M.fmax },
  f64 = { add = function(a, b) return a + b end, min = M.fmin, max = M.fmax },
}

M.IDENTITY = {
  i32 = { add = 0, min = 0x7fffffff, max = -0x80000000 },
  u32 = { add = 0, min = 0xffffffff, max = 0 },
  i64 = { add = 0, min = math.maxinteger, max = math.mininteger },
  u64 = { add = 0, min = -1, max = 0 },
  f32 = { add = -0.0, min = M.NAN, max = M.NAN },
  f64 = { add = -0.0, min = M.NAN, max = M.NAN },
}

function M.is_float(t) return t == "f32" or t == "f64" end

-- Bit-exact equality of two values of type t (floats: -0 differs from +0), except that
-- any two NaNs are the same (vyre leaves NaN payloads free).
function M.same(t, a, b)
  if a == b then
    if a == 0 and M.is_float(t) then return 1 / a == 1 / b end
    return true
  end
  return M.is_float(t) and M.isnan(a) and M.isnan(b)
end

--- A random value of type t (floats of either sign over 2^-12 .. 2^12, exactly
--- representable in t).
function M.random_value(t)
  if t == "i32" then return math.random(-0x80000000, 0x7fffffff) end
  if t == "u32" then return math.random(0, 0xffffffff) end
  if t == "i64" or t == "u64" then return math.random(0) end
  local v = (math.random() * 2 - 1) * 2.0 ^ math.random(-12, 12)
  return t == "f32" and M.f32(v) or v
end

--- n random values of type t from seed.
function M.random_list(t, n, seed)
  math.randomseed(seed)
  local xs = {}
  for i = 1, n do xs[i] = M.random_value(t) end
  return xs
end

return M
