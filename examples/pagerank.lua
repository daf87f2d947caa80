-- pagerank.lua — PageRank of an R-MAT graph to a tolerance (issue 23 §3), f32, pull form.
-- A round: contributions rank/degree; each vertex sums its neighbours' contributions in
-- row order; the residual sum |next - rank| comes from lib.steps.reduce inside the round
-- (a fixed reduction tree, so the same bits on every backend); the last step copies the
-- ranks and raises the flag while the residual is above the tolerance. be:megakernel
-- repeats the round until the flag stays zero. Checked against the same iteration in
-- plain Lua (f64) within 10 x the tolerance.
local dir = arg and arg[0] and arg[0]:match("^(.*)/") or "."
package.path = dir .. "/support/?.lua;" .. dir .. "/../?.lua;" .. package.path
local vyre = require("vyre.cuda")
local common = require("common")
local graph = require("bench.megakernel.graph")
local pagerank = require("bench.megakernel.pagerank")

local be = common.backend()
local g = graph.build(be, {scale = 9, edge_factor = 8, seed = 7})
local n, tol, d = g.nodes, 1e-6, pagerank.DAMPING
local rank = be:buffer("f32", n):fill(common.f32(1 / n))
local nxt, contrib, diff = be:buffer("f32", n), be:buffer("f32", n), be:buffer("f32", n)
local residual, flag = be:buffer("f32", 1), be:buffer("u32", 1)
local steps = {
  {be:compile(vyre.parse(pagerank.CONTRIB)), {rowptr = g.rowptr, rank = rank,
    contrib = contrib}, {n = n}},
  {be:compile(vyre.parse(pagerank.PULL)), {rowptr = g.rowptr, col = g.col, contrib = contrib,
    rank = rank, next = nxt, diff = diff, base = common.f32((1 - d) / n),
    damping = common.f32(d)}, {n = n}},
}
for _, s in ipairs(vyre.lib.steps.reduce(be, diff, "add", {out = residual})) do
  steps[#steps + 1] = s
end
steps[#steps + 1] = {be:compile(vyre.parse(pagerank.UPDATE)), {next = nxt, rank = rank,
  residual = residual, flag = flag, tol = common.f32(tol)}, {n = n}}
local rounds = be:megakernel(steps, {converge = {flag = flag, max = 1000}})

local want, lua_rounds = pagerank.lua_ranks(g.rowptr:download():totable(),
  g.col:download():totable(), tol, 1000)
local got = rank:download()
local l1, top = 0, 1
for v = 1, n do
  l1 = l1 + math.abs(got[v] - want[v])
  if got[v] > got[top] then top = v end
end
common.check(l1 <= 10 * tol, "L1 distance %g to the Lua model exceeds %g", l1, 10 * tol)
common.check(math.abs(rounds - lua_rounds) <= 2, "%d rounds, the Lua model %d", rounds, lua_rounds)
print(("pagerank: %d vertices, %d edges on %s, %d rounds to residual %g, top vertex %d "
  .. "(%.5f), L1 to Lua %.2g — matches")
  :format(n, g.edges, be.name, rounds, tol, top - 1, got[top], l1))
