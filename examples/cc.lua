-- cc.lua — connected components of an R-MAT graph by union-find with hooking and pointer
-- jumping, in the manner of ECL-CC (issue 23 §3): init (each vertex points at its
-- smallest neighbour below it), hook (for each edge, find both representatives and cas
-- the larger root onto the smaller), flatten (each vertex points at its representative).
-- Roots only ever point at smaller vertices, so each component is labelled by its
-- smallest vertex, whatever the order of the atomics. The three steps run as one
-- megakernel (times = 1). Checked against union-find in plain Lua.
local dir = arg and arg[0] and arg[0]:match("^(.*)/") or "."
package.path = dir .. "/support/?.lua;" .. dir .. "/../?.lua;" .. package.path
local vyre = require("vyre.cuda")
local common = require("common")
local graph = require("bench.megakernel.graph")
local cc = require("bench.megakernel.cc")

local be = common.backend()
local g = graph.build(be, {scale = 10, edge_factor = 2, seed = 3})
local parent = be:buffer("u32", g.nodes)
local args = {rowptr = g.rowptr, col = g.col, parent = parent}
be:megakernel({
  {be:compile(vyre.parse(cc.INIT)), args, {n = g.nodes}},
  {be:compile(vyre.parse(cc.HOOK)), args, {n = g.nodes}},
  {be:compile(vyre.parse(cc.FLATTEN)), {parent = parent}, {n = g.nodes}},
}, {times = 1})

local want = cc.lua_labels(g.rowptr:download():totable(), g.col:download():totable())
local got = parent:download()
local comps = 0
for v = 1, g.nodes do
  common.check(got[v] == want[v], "label[%d] = %d, want %d", v - 1, got[v], want[v])
  if want[v] == v - 1 then comps = comps + 1 end
end
print(("cc: %d vertices, %d edges on %s, %d components (labelled by their smallest "
  .. "vertex) — matches")
  :format(g.nodes, g.edges, be.name, comps))
