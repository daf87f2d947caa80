-- bfs_multi.lua — breadth-first search of an R-MAT graph split over the GPUs of a
-- vyre.Group: each GPU owns a range of vertices and their out-edges (CSR of its range)
-- and keeps a full copy of the distances. A round is one g:sequence: on every GPU the
-- frontier vertices it owns lower their neighbours' distances (atomic min, as in
-- bfs.lua), then two collective steps combine the copies — all_reduce min of the
-- distances, all_reduce max of the changed flags — so every copy is the same after each
-- round. The host loop stops after a round that changed nothing. Checked against a
-- queue-based BFS in plain Lua and against the same rounds on one GPU. Needs NCCL and two
-- or more GPUs (VYRE_GPUS=n uses the first n); otherwise it says why and exits.
package.path = (arg and arg[0] and arg[0]:match("^(.*)/") or ".") .. "/support/?.lua;"
  .. package.path
local vyre = require("vyre")

local UNSEEN = 0xffffffff
local round = vyre.program("bfs_part_round", {workgroup = 128,
    vyre.buffer("offsets", "u32", "read"), vyre.buffer("edges", "u32", "read"),
    vyre.buffer("dist", "u32", "read_write"), vyre.buffer("changed", "u32", "read_write", 1),
    vyre.param("level", "u32"), vyre.param("lo", "u32"), vyre.param("cnt", "u32")},
  function(k)
    local v = k:let("v", k.gid.x)        -- the owned vertex lo + v
    k:when(v:lt(k.cnt), function()
      k:when(k.dist[k.lo + v]:eq(k.level), function()
        k:for_("e", k.offsets[v], k.offsets[v + 1], function(e)
          local old = k:let("old", k:atomic("min", k.dist, k.edges[e], k.level + 1))
          k:when(old:gt(k.level + 1), function() k.changed[0] = 1 end)
        end)
      end)
    end)
  end)

local cuda = vyre.cuda
local count = cuda.count() or 0
local ngpu = math.min(tonumber(os.getenv("VYRE_GPUS") or "") or count, count)
local nccl, why = cuda.nccl()
if ngpu < 2 or not nccl then
  print("bfs_multi: needs NCCL and 2 or more GPUs: "
    .. (not nccl and tostring(why) or ("this machine has " .. count)))
  return
end

-- An R-MAT graph (a = 0.57, b = c = 0.19): 2^scale vertices, 4 edges per vertex.
local scale, per = 11, 4
local nv = 1 << scale
local seed = 2024
local function rand()
  seed = (seed * 6364136223846793005 + 1442695040888963407)
  return ((seed >> 11) & 0xfffff) / 0x100000
end
local adj = {}
for v = 0, nv - 1 do adj[v] = {} end
for _ = 1, nv * per do
  local src, dst = 0, 0
  for bit = scale - 1, 0, -1 do
    local r = rand()
    if r >= 0.57 and r < 0.76 then dst = dst | (1 << bit)
    elseif r >= 0.76 and r < 0.95 then src = src | (1 << bit)
    elseif r >= 0.95 then src, dst = src | (1 << bit), dst | (1 << bit) end
  end
  local a = adj[src]
  a[#a + 1] = dst
end

local ords = {}
for i = 1, ngpu do ords[i] = i - 1 end
local g = cuda.group(ords)

-- Rank i owns vertices [lo, lo + cnt) and their out-edges.
local parts, lo = {}, 0
for i = 1, ngpu do
  local cnt = i < ngpu and nv // ngpu or nv - lo
  local offsets, edges = {0}, {}
  for v = lo, lo + cnt - 1 do
    for _, t in ipairs(adj[v]) do edges[#edges + 1] = t end
    offsets[#offsets + 1] = #edges
  end
  if #edges == 0 then edges[1] = 0 end -- a buffer holds at least one element
  local be = g.backends[i]
  local init = vyre.array("u32", nv):fill(UNSEEN)
  init[1] = 0                              -- the source: vertex 0 at level 0
  parts[i] = { be = be, lo = lo, cnt = cnt, k = be:compile(round),
    offsets = be:buffer("u32", offsets), edges = be:buffer("u32", edges),
    dist = be:buffer("u32", init), changed = be:buffer("u32", 1) }
  lo = lo + cnt
end

local dists, flags = {}, {}
for i, p in ipairs(parts) do dists[i], flags[i] = p.dist, p.changed end
local merge_dist = g:collective("all_reduce", dists, "min")
local merge_flag = g:collective("all_reduce", flags, "max")
local level = 0
repeat
  local lists = {}
  for i, p in ipairs(parts) do
    p.changed:zero()
    lists[i] = {
      { p.k, { offsets = p.offsets, edges = p.edges, dist = p.dist, changed = p.changed,
        level = level, lo = p.lo, cnt = p.cnt }, { n = math.max(p.cnt, 1) } },
      merge_dist[i], merge_flag[i] }
  end
  g:sequence(lists)
  level = level + 1
until parts[1].changed:download()[1] == 0
local got = parts[1].dist:download()

local function check(cond, fmt, ...)
  if not cond then error(("check failed: " .. fmt):format(...), 2) end
end
-- every copy is the same
for i = 2, ngpu do
  local other = parts[i].dist:download()
  for v = 1, nv do check(other[v] == got[v], "copy %d differs at vertex %d", i, v - 1) end
end

-- Plain Lua BFS from vertex 0.
local want, queue, head = { [0] = 0 }, { 0 }, 1
while head <= #queue do
  local u = queue[head]
  head = head + 1
  for _, t in ipairs(adj[u]) do
    if want[t] == nil then
      want[t] = want[u] + 1
      queue[#queue + 1] = t
    end
  end
end
local reached, depth = 0, 0
for v = 0, nv - 1 do
  local w = want[v] or UNSEEN
  check(got[v + 1] == w, "dist[%d] = %d, want %d", v, got[v + 1], w)
  if w ~= UNSEEN then reached, depth = reached + 1, math.max(depth, w) end
end
check(level == depth + 1, "%d rounds for depth %d", level, depth)

-- The same rounds on one GPU, all vertices owned by it.
local one = g.backends[1]
local offsets, edges = { 0 }, {}
for v = 0, nv - 1 do
  for _, t in ipairs(adj[v]) do edges[#edges + 1] = t end
  offsets[#offsets + 1] = #edges
end
local init = vyre.array("u32", nv):fill(UNSEEN)
init[1] = 0
local d1, c1 = one:buffer("u32", init), one:buffer("u32", 1)
local k1, o1, e1 = one:compile(round), one:buffer("u32", offsets), one:buffer("u32", edges)
local one_level = 0
repeat
  c1:zero()
  k1:launch({ offsets = o1, edges = e1, dist = d1, changed = c1, level = one_level, lo = 0,
    cnt = nv }, { n = nv })
  one_level = one_level + 1
until c1:download()[1] == 0
local one_got = d1:download()
check(one_level == level, "one GPU took %d rounds, the group %d", one_level, level)
for v = 1, nv do check(one_got[v] == got[v], "one GPU differs at vertex %d", v - 1) end
print(("bfs_multi: R-MAT graph of %d vertices and %d edges on %d GPUs, %d reached in %d "
  .. "levels (%d rounds) — matches plain Lua and one GPU"):format(nv, nv * per, ngpu, reached,
  depth, level))
g:free()
