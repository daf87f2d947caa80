-- bench/megakernel/pagerank.lua — PageRank to a tolerance on an R-MAT graph in CSR (pull
-- form, f32), each round's residual computed on the device by lib.steps.reduce:
--   1. pr_contrib: contrib[u] = rank[u] / degree(u) (0 for an isolated vertex);
--   2. pr_pull: next[v] = (1 - damping) / n + damping * (sum of contrib over v's row, in
--      row order), diff[v] = |next[v] - rank[v]|;
--   3. lib.steps.reduce(diff, add) -> residual[0] (a fixed tree: the same bits everywhere);
--   4. pr_update: rank = next; invocation 0 raises the flag while residual > tol.
-- The rounds repeat until a round leaves the flag zero (converge = {flag =}). No float
-- atomics and a fixed order for every sum (rows are sorted by graph.lua), so ranks and
-- rounds are the same bits on every backend. The mass of isolated vertices is not
-- redistributed (they keep the teleport term only): the Lua model does the same.
-- Checked against the same iteration in plain Lua (f64) within 10 x tol (L1).
local common = require("bench.megakernel.common")
local graph = require("bench.megakernel.graph")

local M = { name = "pagerank",
  title = "PageRank to a tolerance (f32, residual by lib.steps.reduce)" }

M.DAMPING = 0.85

M.CONTRIB = [[
(program pr_contrib (workgroup 256)
  (buffer rowptr u32 read)
  (buffer rank f32 read)
  (buffer contrib f32 write)
  (let u (gid x))
  (if (lt u (len rank))
    (then
      (let deg (sub (load rowptr (add u 1u32)) (load rowptr u)))
      (store contrib u (select (eq deg 0u32) 0.0f32
        (div (load rank u) (cast f32 (max deg 1u32))))))))]]

M.PULL = [[
(program pr_pull (workgroup 256)
  (buffer rowptr u32 read)
  (buffer col u32 read)
  (buffer contrib f32 read)
  (buffer rank f32 read)
  (buffer next f32 write)
  (buffer diff f32 write)
  (param base f32)
  (param damping f32)
  (let v (gid x))
  (if (lt v (len rank))
    (then
      (let s 0.0f32)
      (for e (load rowptr v) (load rowptr (add v 1u32)) 1u32
        (set s (add s (load contrib (load col e)))))
      (let nv (add base (mul damping s)))
      (store next v nv)
      (store diff v (abs (sub nv (load rank v)))))))]]

M.UPDATE = [[
(program pr_update (workgroup 256)
  (buffer next f32 read)
  (buffer rank f32 write)
  (buffer residual f32 read)
  (buffer flag u32 read_write)
  (param tol f32)
  (let v (gid x))
  (if (lt v (len rank))
    (then
      (store rank v (load next v))
      (if (land (eq v 0u32) (gt (load residual 0u32) tol))
        (then (store flag 0u32 1u32))))))]]

local function f32(x)
  return (string.unpack("f", string.pack("f", x)))
end

--- The same iteration in plain Lua (f64): ranks, rounds (the round whose residual is at
--- most tol is the last, as on the device).
function M.lua_ranks(rowptr, col, tol, max_rounds)
  local n = #rowptr - 1
  local d = M.DAMPING
  local base = (1 - d) / n
  local rank = {}
  for v = 1, n do rank[v] = 1 / n end
  for r = 1, max_rounds do
    local contrib = {}
    for u = 1, n do
      local deg = rowptr[u + 1] - rowptr[u]
      contrib[u] = deg > 0 and rank[u] / deg or 0
    end
    local res, nxt = 0, {}
    for v = 1, n do
      local s = 0
      for e = rowptr[v] + 1, rowptr[v + 1] do s = s + contrib[col[e] + 1] end
      nxt[v] = base + d * s
      res = res + math.abs(nxt[v] - rank[v])
    end
    rank = nxt
    if res <= tol then return rank, r end
  end
  return rank, max_rounds
end

function M.setup(be, o)
  local lib = require("vyre.lib")
  local g = graph.shared(be, { scale = o.scale, edge_factor = o.edge_factor, seed = o.seed })
  local n = g.nodes
  local tol = o.tol or 1e-6
  local rank, nxt = be:buffer("f32", n), be:buffer("f32", n)
  local contrib, diff = be:buffer("f32", n), be:buffer("f32", n)
  local residual, flag = be:buffer("f32", 1), be:buffer("u32", 1)
  local steps = {
    { common.kernel(be, M.CONTRIB), { rowptr = g.rowptr, rank = rank, contrib = contrib },
      { n = n } },
    { common.kernel(be, M.PULL), { rowptr = g.rowptr, col = g.col, contrib = contrib,
      rank = rank, next = nxt, diff = diff, base = f32((1 - M.DAMPING) / n),
      damping = f32(M.DAMPING) }, { n = n } },
  }
  for _, s in ipairs(lib.steps.reduce(be, diff, "add", { out = residual })) do
    steps[#steps + 1] = s
  end
  steps[#steps + 1] = { common.kernel(be, M.UPDATE), { next = nxt, rank = rank,
    residual = residual, flag = flag, tol = f32(tol) }, { n = n } }
  local inst = {
    flag = flag, output = rank, nodes = n, edges = g.edges, graph = g, tol = tol,
    max_rounds = o.max_rounds or 1000, steps = steps,
    -- rowptr twice, col, contrib per entry, rank/next/diff/contrib per vertex
    bytes_per_round = 8 * g.entries + 32 * n,
  }
  function inst.reset()
    rank:fill(f32(1 / n))
    flag:zero()
  end
  function inst.check(rounds)
    if rounds >= inst.max_rounds then
      return false, ("hit the round cap (%d) before the residual fell to %g"):format(rounds, tol)
    end
    local want, lr = M.lua_ranks(g.rowptr:download():totable(), g.col:download():totable(),
      tol, inst.max_rounds)
    local got = rank:download():totable()
    local l1 = 0
    for v = 1, n do l1 = l1 + math.abs(got[v] - want[v]) end
    local msg = ("%d rounds (Lua model %d), L1 distance to the Lua model %.3g"):format(rounds,
      lr, l1)
    if l1 > 10 * tol or math.abs(rounds - lr) > 2 then return false, msg end
    return true, msg
  end
  return inst
end

return M
