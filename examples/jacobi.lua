-- jacobi.lua — Laplace's equation on a 2-D grid by Jacobi sweeps, to a tolerance: a 2-D
-- launch (workgroup 16x16, n = {w, h}), two buffers swapped each sweep, and every 25
-- sweeps the largest change (vyre.lib.reduce max over a per-cell diff buffer) decides
-- whether to stop. Checked bit for bit against the same sweeps in plain Lua (f32).
package.path = (arg and arg[0] and arg[0]:match("^(.*)/") or ".") .. "/support/?.lua;"
  .. package.path
local vyre = require("vyre.cuda")
local lib = require("vyre.lib")
local common = require("common")

local sweep = vyre.program("jacobi", {workgroup = {16, 16},
    vyre.buffer("u", "f32", "read"), vyre.buffer("v", "f32", "write"),
    vyre.buffer("diff", "f32", "write"),
    vyre.param("w", "u32"), vyre.param("h", "u32")},
  function(k)
    -- gid.y is a second axis only because the launch passes n = {w, h}.
    local x, y = k:let("x", k.gid.x), k:let("y", k.gid.y)
    k:when(x:lt(k.w):land(y:lt(k.h)), function()
      local i = k:let("i", y * k.w + x)
      local inside = x:gt(0):land(x:lt(k.w - 1)):land(y:gt(0)):land(y:lt(k.h - 1))
      k:when(inside, function()
        local nv = k:let("nv", (k.u[i - 1] + k.u[i + 1] + k.u[i - k.w] + k.u[i + k.w]) * 0.25)
        k.v[i] = nv
        k.diff[i] = (nv - k.u[i]):abs()
      end, function()          -- the boundary keeps its value
        k.v[i] = k.u[i]
        k.diff[i] = 0.0
      end)
    end)
  end)

local be = common.backend()
local w, h, tol, check_every, max_sweeps = 40, 32, 1e-3, 25, 5000
local init = vyre.array("f32", w * h)
for x = 0, w - 1 do init[x + 1] = 1.0 end       -- the top edge is held at 1, the rest at 0
local a, b = be:buffer("f32", init), be:buffer("f32", init)
local diff = be:buffer("f32", w * h)
local kern = be:compile(sweep)
local geo = {n = {w, h}}
local ab = kern:bind({u = a, v = b, diff = diff, w = w, h = h}, geo)   -- a -> b
local ba = kern:bind({u = b, v = a, diff = diff, w = w, h = h}, geo)   -- b -> a
local sweeps, change = 0, math.huge
while change >= tol and sweeps < max_sweeps do
  for _ = 1, check_every do
    if sweeps % 2 == 0 then ab() else ba() end
    sweeps = sweeps + 1
  end
  change = lib.reduce(be, diff, "max")
end
local got = (sweeps % 2 == 0 and a or b):download()

-- The same sweeps in plain Lua, rounding every f32 operation as the kernel does.
local f32 = common.f32
local u, v = init:totable(), init:totable()
local lua_sweeps, lua_change = 0, math.huge
while lua_change >= tol and lua_sweeps < max_sweeps do
  for _ = 1, check_every do
    lua_change = 0
    for y = 1, h - 2 do
      for x = 1, w - 2 do
        local i = y * w + x + 1
        local s = f32(f32(f32(u[i - 1] + u[i + 1]) + u[i - w]) + u[i + w])
        local nv = f32(s * 0.25)
        v[i] = nv
        lua_change = math.max(lua_change, math.abs(f32(nv - u[i])))
      end
    end
    u, v = v, u
    lua_sweeps = lua_sweeps + 1
  end
end
common.check(sweeps == lua_sweeps, "%d sweeps, plain Lua needed %d", sweeps, lua_sweeps)
common.check(change == lua_change, "last change %.9g, plain Lua %.9g", change, lua_change)
for i = 1, w * h do
  common.check(got[i] == u[i], "cell %d = %.9g, want %.9g", i, got[i], u[i])
end
local mid = (h // 2) * w + w // 2 + 1
print(("jacobi: %dx%d grid on %s converged to %.0e in %d sweeps, centre = %.6f — matches")
  :format(w, h, be.name, tol, sweeps, got[mid]))
