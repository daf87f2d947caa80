-- bfs_rmat.lua — breadth-first search by worklist on an R-MAT graph (issue 23 §3). The
-- graph is built on the device as CSR (bench/megakernel/graph.lua: R-MAT edges, a radix
-- sort, row starts). The frontier is a vyre.Worklist: a round expands every current
-- vertex and pushes each neighbour it reaches first; be:megakernel runs the rounds until
-- one pushes nothing. vyre.policy.expansion picks the expansion layout from the degree
-- statistics (an invocation per vertex, a subgroup per high-degree vertex, or
-- edge-balanced chunks of the round's entries; docs/GRID.md); all three run here, the
-- chosen one first. "edges" makes the round several steps (the frontier's degrees, their
-- scan on the device, the balanced walk): vyre.lib.steps.expand builds them (each step
-- carries the layout, which be:plan shows), and be:megakernel runs them as one kernel.
-- The levels are checked against a queue BFS in plain Lua.
local dir = arg and arg[0] and arg[0]:match("^(.*)/") or "."
package.path = dir .. "/support/?.lua;" .. dir .. "/../?.lua;" .. package.path
local vyre = require("vyre.cuda")
local common = require("common")
local graph = require("bench.megakernel.graph")
local bfs = require("bench.megakernel.bfs_wl")

local UNSEEN = 0xffffffff
local be = common.backend()
local g = graph.build(be, {scale = 9, edge_factor = 8, seed = 5})
local rowptr, col = g.rowptr:download():totable(), g.col:download():totable()
local stats = graph.degree_stats(rowptr)
local choice = vyre.policy.choose_expansion(stats)
print(("layout chosen: %s — %s"):format(choice.layout, choice.reason))

local want = bfs.lua_levels(rowptr, col)
local depth = 0
for _, l in ipairs(want) do if l ~= UNSEEN and l > depth then depth = l end end

local layouts = {choice.layout}
for _, l in ipairs({"item", "subgroup", "edges"}) do
  if l ~= choice.layout then layouts[#layouts + 1] = l end
end
for _, layout in ipairs(layouts) do
  local level = be:buffer("u32", vyre.array("u32", g.nodes):fill(UNSEEN))
  level:upload({0})                                  -- the source: vertex 0 (the R-MAT hub)
  local frontier <close> = be:worklist("u32", g.nodes) -- each vertex is pushed at most once
  frontier:push({0})
  -- bfs.round: lib.steps.expand with BFS's per-vertex and per-neighbour text
  local steps = bfs.round(be, g, level, frontier, {layout = layout})
  local plan = be:plan(steps, {converge = {worklist = frontier, max = 1000}})
  common.check(plan.expansion.layout == layout, "%s: be:plan shows %s", layout,
    tostring(plan.expansion.layout))
  local rounds = be:megakernel(steps, {converge = {worklist = frontier, max = 1000}})
  local got = level:download()
  for v = 1, g.nodes do
    common.check(got[v] == want[v], "%s: level[%d] = %d, want %d", layout, v - 1, got[v], want[v])
  end
  -- the round that expands the deepest level pushes nothing and ends the loop
  common.check(rounds == depth + 1, "%s: %d rounds for depth %d", layout, rounds, depth)
  print(("bfs_rmat (%s layout): %d vertices, %d edges on %s, depth %d in %d rounds — matches")
    :format(layout, g.nodes, g.edges, be.name, depth, rounds))
end
