-- saxpy.lua — the main example: y = a*x + y over a million floats, built with the DSL,
-- run on the best backend (CUDA if usable, else the reference interpreter), checked
-- element by element against the f32 result computed here in Lua.
package.path = (arg and arg[0] and arg[0]:match("^(.*)/") or ".") .. "/support/?.lua;"
  .. package.path
local vyre = require("vyre.cuda")
local common = require("common")

local saxpy = vyre.program("saxpy", {workgroup = 256,
    vyre.buffer("x", "f32", "read"), vyre.buffer("y", "f32", "read_write"),
    vyre.param("a", "f32")},
  function(k)
    local i = k:let("i", k.gid.x)
    k:when(i:lt(k.y:len()), function()
      k.y[i] = k.a * k.x[i] + k.y[i]
    end)
  end)

print(saxpy:text())
local be = common.backend()
local n = be.name == "cuda" and (1 << 20) or (1 << 16)
local x, y = vyre.array("f32", n), vyre.array("f32", n)
for i = 1, n do x[i] = i * 0.5; y[i] = 1.0 / i end
local a = 2.5

local out = be:run(saxpy, {x = x, y = y, a = a}, {n = n})
local f32 = common.f32
for i = 1, n do
  local want = f32(f32(a * x[i]) + y[i])
  common.check(out.y[i] == want, "y[%d] = %.9g, want %.9g", i, out.y[i], want)
end
print(("saxpy: %d elements on %s, y[1] = %.7g, y[%d] = %.7g — all match the f32 reference"):format(
  n, be.name, out.y[1], n, out.y[n]))
