-- sssp.lua — single-source shortest paths by worklist (Bellman–Ford with a frontier) on
-- an R-MAT graph with u32 weights 1..64 (issue 23 §3). A round is two steps over the
-- current vertices: a snapshot of their distances (and their "queued" bits cleared),
-- then the relaxation of their edges with an atomic min, pushing each vertex whose
-- distance fell (once, by its queued bit). Relaxing from the snapshot makes the rounds
-- and distances independent of the order of the items and atomics. be:megakernel runs
-- the rounds until one pushes nothing. It runs the layout vyre.policy.expansion picks and
-- the edge-balanced one ("edges": the frontier's degrees scanned on the device, then
-- equal chunks of the round's entries; vyre.lib.steps.expand builds the steps). Checked against
-- Dijkstra in plain Lua.
local dir = arg and arg[0] and arg[0]:match("^(.*)/") or "."
package.path = dir .. "/support/?.lua;" .. dir .. "/../?.lua;" .. package.path
local vyre = require("vyre.cuda")
local common = require("common")
local graph = require("bench.megakernel.graph")
local sssp = require("bench.megakernel.sssp")

local INF = 0xffffffff
local be = common.backend()
local g = graph.build(be, {scale = 9, edge_factor = 8, seed = 11, weights = true})
local rowptr = g.rowptr:download():totable()
local layout = vyre.policy.choose_expansion(graph.degree_stats(rowptr)).layout

local want = sssp.lua_dist(rowptr, g.col:download():totable(), g.wt:download():totable())
local snap_k = be:compile(vyre.parse(sssp.SNAP))

for _, lay in ipairs(layout == "edges" and {"edges"} or {layout, "edges"}) do
  local dist = be:buffer("u32", vyre.array("u32", g.nodes):fill(INF))
  dist:upload({0})
  local snap, queued = be:buffer("u32", g.nodes), be:buffer("u32", g.nodes)
  local frontier <close> = be:worklist("u32", g.nodes)
  frontier:push({0})
  local steps = {{snap_k, {dist = dist, snap = snap, queued = queued, frontier = frontier},
    {n = frontier}}}
  local relax = sssp.relax(be, g, {snap = snap, dist = dist, queued = queued}, frontier,
    {layout = lay})
  for _, s in ipairs(relax) do steps[#steps + 1] = s end
  local rounds = be:megakernel(steps, {converge = {worklist = frontier, max = 10000}})

  local got = dist:download()
  local reached, far = 0, 0
  for v = 1, g.nodes do
    common.check(got[v] == want[v], "%s: dist[%d] = %d, Dijkstra says %d", lay, v - 1, got[v],
      want[v])
    if want[v] ~= INF then reached, far = reached + 1, math.max(far, want[v]) end
  end
  print(("sssp (%s layout): %d vertices, %d edges on %s, %d reached, farthest at %d, "
    .. "%d rounds — matches")
    :format(lay, g.nodes, g.edges, be.name, reached, far, rounds))
end
