-- bench/megakernel/rmat.lua — BFS on an R-MAT graph (Graph500's generator parameters
-- a = 0.57, b = 0.19, c = 0.19, d = 0.05; 2^scale vertices, edge_factor x 2^scale
-- edges, treated as undirected; no vertex relabelling) from vertex 0, the generator's
-- hub. The edges are generated on the device by a vyre program from the seed (a hash
-- per edge and level picks the quadrant), so the 16 M edges of scale 20 cost no host
-- time. Edge-centric level-synchronous BFS: few, heavy rounds. Checked in plain Lua the
-- way Graph500 validates a BFS: the source is at 0, every edge joins two reached
-- vertices whose levels differ by at most 1 (or two unreached ones), every reached
-- vertex but the source has a neighbour one level closer, and rounds = depth + 1.
local common = require("bench.megakernel.common")

local M = { name = "rmat", title = "BFS, R-MAT graph" }

-- Quadrant thresholds in 1/65536: a, a + b, a + b + c.
local GEN = [[
(program rmat_gen (workgroup 256)
  (buffer src u32 write)
  (buffer dst u32 write)
  (param seed u32)
  (param scale u32)
  (let e (gid x))
  (if (lt e (len src))
    (then
      (let s 0u32)
      (let d 0u32)
      (for l 0u32 scale 1u32
        (let h0 (add (mul e 0x9e3779b1u32) (add (mul l 0x85ebca77u32) seed)))
        (let h1 (mul (xor h0 (shr h0 16u32)) 0x7feb352du32))
        (let h2 (mul (xor h1 (shr h1 15u32)) 0x846ca68bu32))
        (let r (and (xor h2 (shr h2 16u32)) 0xffffu32))
        (let bit (shl 1u32 l))
        (set s (or s (select (ge r 49807u32) bit 0u32)))
        (set d (or d (select (lor (land (ge r 37355u32) (lt r 49807u32)) (ge r 62259u32))
          bit 0u32))))
      (store src e s)
      (store dst e d))))]]

local EXPAND = [[
(program rmat_expand (workgroup 256)
  (buffer src u32 read)
  (buffer dst u32 read)
  (buffer dist u32 read_write)
  (buffer level u32 read)
  (buffer flag u32 read_write)
  (let e (gid x))
  (if (lt e (len src))
    (then
      (let lv (load level 0u32))
      (let nl (add lv 1u32))
      (let a (load src e))
      (let b (load dst e))
      (let da (load dist a))
      (let db (load dist b))
      (if (land (eq da lv) (eq db 0xffffffffu32))
        (then
          (let o1 (atomic min dist b nl))
          (if (gt o1 nl) (then (atomic or flag 0u32 1u32)))))
      (if (land (eq db lv) (eq da 0xffffffffu32))
        (then
          (let o2 (atomic min dist a nl))
          (if (gt o2 nl) (then (atomic or flag 0u32 1u32))))))))]]

M.GEN, M.EXPAND = GEN, EXPAND

--- Graph500-style validation of dist (1-based tables) over the edge lists.
function M.validate(src, dst, dist, rounds)
  local INF = common.INF
  if dist[1] ~= 0 then return false, ("the source is at level %d"):format(dist[1]) end
  local parent = { [1] = true }
  for e = 1, #src do
    local a, b = src[e] + 1, dst[e] + 1
    local da, db = dist[a], dist[b]
    if (da == INF) ~= (db == INF) then
      return false, ("edge %d (%d, %d) joins a reached and an unreached vertex"):format(e - 1,
        a - 1, b - 1)
    end
    if da ~= INF then
      if da - db > 1 or db - da > 1 then
        return false, ("edge %d (%d, %d): levels %d and %d"):format(e - 1, a - 1, b - 1, da, db)
      end
      if da == db + 1 then parent[a] = true end
      if db == da + 1 then parent[b] = true end
    end
  end
  local depth, reached = 0, 0
  for v = 1, #dist do
    if dist[v] ~= INF then
      reached = reached + 1
      if not parent[v] then
        return false, ("vertex %d at level %d has no neighbour one level closer"):format(v - 1,
          dist[v])
      end
      if dist[v] > depth then depth = dist[v] end
    end
  end
  if rounds ~= depth + 1 then
    return false, ("%d rounds, depth %d (want %d rounds)"):format(rounds, depth, depth + 1)
  end
  return true, ("%d of %d vertices reached, depth %d"):format(reached, #dist, depth)
end

--- setup(be, {scale =, edge_factor =, seed =}) -> workload instance (see run.lua).
function M.setup(be, o)
  local vyre = require("vyre")
  local scale, ef = o.scale or 20, o.edge_factor or 16
  local nv, ne = 1 << scale, ef << scale
  local src, dst = be:buffer("u32", ne), be:buffer("u32", ne)
  be:sequence({ { common.kernel(be, GEN), { src = src, dst = dst, seed = o.seed or 1,
    scale = scale }, { n = ne } } })
  local dist = be:buffer("u32", nv)
  local level, flag = be:buffer("u32", 1), be:buffer("u32", 1)
  local init = {}
  for i = 1, nv do init[i] = common.INF end
  init[1] = 0
  local init_arr = vyre.array("u32", init)
  local inst = {
    flag = flag, output = dist, nodes = nv, edges = ne, max_rounds = o.max_rounds or 1000,
    -- every edge's two endpoints and their levels, each round
    bytes_per_round = 16 * ne,
    steps = {
      { common.kernel(be, EXPAND), { src = src, dst = dst, dist = dist, level = level,
        flag = flag }, { n = ne } },
      common.advance_step(be, level),
    },
  }
  function inst.reset()
    dist:upload(init_arr)
    level:zero()
    flag:zero()
  end
  function inst.check(rounds)
    return M.validate(common.u32s(src), common.u32s(dst), common.u32s(dist), rounds)
  end
  return inst
end

return M
