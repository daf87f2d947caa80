-- bfs.lua — breadth-first search to convergence: levels of a random directed graph in CSR
-- form (offsets, edges). One launch per frontier round: every vertex on the current level
-- lowers its neighbours' distance to level + 1 with an atomic min and raises a changed
-- flag when it lowered one; the host loop stops after the first round that changed
-- nothing. Checked against a queue-based BFS in plain Lua.
package.path = (arg and arg[0] and arg[0]:match("^(.*)/") or ".") .. "/support/?.lua;"
  .. package.path
local vyre = require("vyre.cuda")
local common = require("common")

local UNSEEN = 0xffffffff
local round = vyre.program("bfs_round", {workgroup = 128,
    vyre.buffer("offsets", "u32", "read"), vyre.buffer("edges", "u32", "read"),
    vyre.buffer("dist", "u32", "read_write"), vyre.buffer("changed", "u32", "read_write", 1),
    vyre.param("level", "u32")},
  function(k)
    local v = k:let("v", k.gid.x)
    -- dist[v] == level: v is on the frontier. (:land evaluates both sides; dist[v] past
    -- the end reads 0, and the bound check is what leaves such v out.)
    k:when(v:lt(k.dist:len()):land(k.dist[v]:eq(k.level)), function()
      k:for_("e", k.offsets[v], k.offsets[v + 1], function(e)
        local old = k:let("old", k:atomic("min", k.dist, k.edges[e], k.level + 1))
        k:when(old:gt(k.level + 1), function() k.changed[0] = 1 end)
      end)
    end)
  end)

-- A random graph: each vertex has 1 to 3 out-edges to random vertices (some vertices have
-- no in-edge, are unreachable from vertex 0, and stay UNSEEN).
local nv = 5000
local offsets, edges = {0}, {}
local seed = 99
local function rand(m)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return (seed >> 8) % m
end
for _ = 1, nv do
  for _ = 1, 1 + rand(3) do edges[#edges + 1] = rand(nv) end
  offsets[#offsets + 1] = #edges
end

local be = common.backend()
local d_off, d_edges = be:buffer("u32", offsets), be:buffer("u32", edges)
local dist = be:buffer("u32", vyre.array("u32", nv):fill(UNSEEN))
dist:upload({0})                               -- the source: vertex 0 at level 0
local changed = be:buffer("u32", 1)
local kern = be:compile(round)
local level = 0
repeat
  changed:zero()
  kern:launch({offsets = d_off, edges = d_edges, dist = dist, changed = changed,
    level = level}, {n = nv})
  level = level + 1
until changed:download()[1] == 0              -- waits for the launch, then reads the flag
local got = dist:download()

-- Plain Lua BFS from vertex 0 (0-based vertex ids, as on the device).
local want, queue, head = {[0] = 0}, {0}, 1
while head <= #queue do
  local u = queue[head]; head = head + 1
  for e = offsets[u + 1] + 1, offsets[u + 2] do
    local t = edges[e]
    if want[t] == nil then want[t] = want[u] + 1; queue[#queue + 1] = t end
  end
end
local reached, depth = 0, 0
for i = 0, nv - 1 do
  local w = want[i] or UNSEEN
  common.check(got[i + 1] == w, "dist[%d] = %d, want %d", i, got[i + 1], w)
  if w ~= UNSEEN then reached, depth = reached + 1, math.max(depth, w) end
end
-- The last round finds nothing new: one round per level past the source, plus that one.
common.check(level == depth + 1, "%d rounds for depth %d", level, depth)
print(("bfs: %d vertices, %d edges on %s, %d reached in %d levels (%d rounds) — matches")
  :format(nv, #edges, be.name, reached, depth, level))
