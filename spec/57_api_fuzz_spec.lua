-- 57: the Lua API surface under garbage (issue 14, item 3): every method of every
-- object and every vyre.* function, called with every pair drawn from a list of
-- wrong types, nil, NaN, infinities, huge and negative numbers, freed objects and
-- objects of the wrong class (as arguments and as self). Each call either works or
-- raises a string error with a "Fix:"; none crashes the Lua state. The CUDA variant
-- runs the same on a device (gpu tag).
local vyre = require("vyre")
local H = require("spec.helpers")

local function surface(be)
  local p = vyre.parse(H.INC)
  local k = be:compile(p)
  local buf = be:buffer("u32", 4)
  local l = k:bind({ v = buf })
  local g = be:graph({ { k, { v = buf } } })
  local arr = vyre.array("f32", 3)
  local freed_buf = be:buffer("u32", 2)
  freed_buf:free()
  local freed_k = be:compile(p)
  freed_k:free()
  local freed_arr = vyre.array("u32", 2)
  freed_arr:free()
  local objects = { be = be, k = k, buf = buf, l = l, g = g, arr = arr, p = p,
    freed_buf = freed_buf, freed_k = freed_k, freed_arr = freed_arr }
  local values = { true, 0, -1, 1.5, 0 / 0, math.huge, -math.huge, math.maxinteger,
    math.mininteger, 2 ^ 53, "", "u32", "x", {}, { 1, 2 }, { v = buf }, { n = -1 },
    { n = 0 / 0 }, { grid = { 0 } }, { times = -1 }, print, coroutine.create(print) }
  for _, o in pairs(objects) do values[#values + 1] = o end
  values[#values + 1] = false -- a stand-in for nil at the end (nil is the "absent" case)
  return objects, values
end

local function methods_of(objects)
  local list = {}
  for name, obj in pairs(objects) do
    local idx = getmetatable(obj).__index
    local names = {}
    if type(idx) == "function" then -- classes with fields: the methods are its upvalue
      idx = select(2, debug.getupvalue(idx, 1))
    end
    for m in pairs(idx) do names[#names + 1] = m end
    table.sort(names)
    for _, m in ipairs(names) do
      local f = obj[m]
      -- launch_raw passes raw pointers to a kernel by design (unchecked: a garbage
      -- integer is a device fault, documented), so it is not hammered here
      if type(f) == "function" and m ~= "free" and m ~= "launch_raw" then
        list[#list + 1] = { name .. ":" .. m, f, obj }
      end
    end
  end
  for _, m in ipairs({ "parse", "validate", "ptx", "random_program", "array", "program", "buffer",
    "shared", "param", "cast", "bitcast", "select", "fma", "lit", "backend" }) do
    list[#list + 1] = { "vyre." .. m, vyre[m] }
  end
  return list
end

local function hammer(be)
  local objects, values = surface(be)
  local calls, errors, bad = 0, 0, {}
  local function check(label, ok, e)
    calls = calls + 1
    if ok then return end
    errors = errors + 1
    -- a vyre.Error (code, message, fix; docs/API.md "Errors") or, from Lua's own
    -- argument checks, a string; either way with a Fix
    local is_error = require("vyre.errors").is(e)
    if is_error and not (e.code and e.fix) then
      bad[#bad + 1] = label .. ": no code or fix: " .. tostring(e)
    elseif not is_error and (type(e) ~= "string" or not e:find("Fix", 1, true)) then
      bad[#bad + 1] = label .. ": " .. tostring(e)
    end
  end
  for _, fe in ipairs(methods_of(objects)) do
    local name, f, self = fe[1], fe[2], fe[3]
    for i = 0, #values do
      local a = values[i] -- values[0] is nil
      for j = 0, #values do
        local b = values[j]
        if self then check(name, pcall(f, self, a, b)) else check(name, pcall(f, a, b)) end
      end
      if self then check(name .. " (self)", pcall(f, a)) end
    end
  end
  collectgarbage()
  collectgarbage()
  return calls, errors, bad
end

describe("the Lua API under garbage arguments", function()
  it("gives an error with a Fix or works, never crashes (reference)", function()
    local calls, errors, bad = hammer(H.ref())
    assert.is_true(calls > 20000 and errors > 10000, calls .. " calls, " .. errors .. " errors")
    assert.are.same({}, bad)
  end)

  it("#gpu gives an error with a Fix or works, never crashes (cuda)", function()
    local be = assert(require("vyre.cuda").device(0))
    local calls, _, bad = hammer(be)
    assert.is_true(calls > 20000)
    assert.are.same({}, bad)
    be:synchronize()
    assert.is_false(be:lost()) -- no call left the device faulted
  end)
end)
