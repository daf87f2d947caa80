-- vyre.planners.check — argument checks shared by the planners, so every planner words
-- its errors the same way: "fname: what went wrong. Fix: how". `level` counts from the
-- planner function the user called (1 = that function's caller).
local Err = require("vyre.errors")
local M = {}

--- Raises "fname: what. Fix: fix" at the caller of the planner function.
function M.fail(fname, what, fix, level)
  -- reason: what went wrong without the name, for a planner that re-words the error
  Err.raise("arg", Err.format(fname, what, fix), (level or 1) + 2, { reason = what })
end

function M.table(v, name, fname, fix)
  if type(v) ~= "table" then
    M.fail(fname, ("%s must be a table (got %s)"):format(name, type(v)), fix, 2)
  end
  return v
end

--- An integer >= min (nil allowed when dflt is given, which is returned instead).
function M.int(t, k, min, fname, dflt, label)
  local v = t[k]
  if v == nil and dflt ~= nil then return dflt end
  if math.type(v) ~= "integer" then
    if type(v) == "number" and v == math.floor(v) and v >= -2^53 and v <= 2^53 then
      v = math.tointeger(v)
    end
  end
  if math.type(v) ~= "integer" or v < min then
    M.fail(fname, ("%s.%s must be an integer >= %d (got %s)"):format(label or "input", k, min,
      tostring(t[k])), ("set %s = %d or more"):format(k, math.max(min, 1)), 2)
  end
  return v
end

--- A finite number in [min, max] (max optional; nil allowed when dflt is given).
function M.num(t, k, min, max, fname, dflt, label)
  local v = t[k]
  if v == nil and dflt ~= nil then return dflt end
  if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge or v < min
    or (max and v > max) then
    local range = max and ("in [%s, %s]"):format(min, max) or (">= %s"):format(min)
    M.fail(fname, ("%s.%s must be a number %s (got %s)"):format(label or "input", k, range,
      tostring(v)), ("give %s a value %s"):format(k, range), 2)
  end
  return v
end

function M.bool(t, k, fname, dflt, label)
  local v = t[k]
  if v == nil and dflt ~= nil then return dflt end
  if type(v) ~= "boolean" then
    M.fail(fname, ("%s.%s must be a boolean (got %s)"):format(label or "input", k, type(v)),
      ("set %s = true or false"):format(k), 2)
  end
  return v
end

--- a * b, raising when the product leaves the exact integer range (2^53: byte counts
--- stay exact in a Lua float too).
function M.mul(a, b, what, fname)
  local r = a * b
  if a ~= 0 and (r // a ~= b or r > 2^53) then
    M.fail(fname, ("%s overflows (%d x %d)"):format(what, a, b),
      "check the sizes: they exceed 2^53 bytes", 2)
  end
  return r
end

function M.add(a, b, what, fname)
  local r = a + b
  if r > 2^53 then
    M.fail(fname, ("%s overflows (%d + %d)"):format(what, a, b),
      "check the sizes: they exceed 2^53 bytes", 2)
  end
  return r
end

return M
