-- bench/megakernel/bfs_grid.lua — frontier BFS on a W x H grid graph (4-neighbour
-- lattice, each edge kept with probability 0.95 from the seed; the corner's own two
-- edges always kept) from vertex 0. Level-synchronous: round r expands the vertices at
-- distance r - 1 (dist == level), claims unvisited neighbours with atomic min, sets the
-- flag for each new vertex, then `advance` bumps the level. Rounds = eccentricity + 1,
-- about 2000 small frontiers at 1024 x 1024. Checked against a plain-Lua BFS.
local common = require("bench.megakernel.common")

local M = { name = "bfs_grid", title = "frontier BFS, grid graph" }

-- mask bits: 1 = right (+1), 2 = left (-1), 4 = down (+W), 8 = up (-W).
local EXPAND = [[
(program bfs_grid_expand (workgroup 256)
  (buffer mask u32 read)
  (buffer dist u32 read_write)
  (buffer level u32 read)
  (buffer flag u32 read_write)
  (param width u32)
  (let v (gid x))
  (if (lt v (len dist))
    (then
      (let lv (load level 0u32))
      (if (eq (load dist v) lv)
        (then
          (let m (load mask v))
          (let nl (add lv 1u32))
          (if (ne (and m 1u32) 0u32)
            (then
              (let o1 (atomic min dist (add v 1u32) nl))
              (if (gt o1 nl) (then (atomic or flag 0u32 1u32)))))
          (if (ne (and m 2u32) 0u32)
            (then
              (let o2 (atomic min dist (sub v 1u32) nl))
              (if (gt o2 nl) (then (atomic or flag 0u32 1u32)))))
          (if (ne (and m 4u32) 0u32)
            (then
              (let o3 (atomic min dist (add v width) nl))
              (if (gt o3 nl) (then (atomic or flag 0u32 1u32)))))
          (if (ne (and m 8u32) 0u32)
            (then
              (let o4 (atomic min dist (sub v width) nl))
              (if (gt o4 nl) (then (atomic or flag 0u32 1u32))))))))))]]

M.EXPAND = EXPAND

--- The seeded edge masks of a w x h grid (a Lua table, 1-based by vertex + 1).
function M.masks(w, h, seed)
  local rng = common.rng(seed)
  local mask = {}
  for i = 1, w * h do mask[i] = 0 end
  for y = 0, h - 1 do
    for x = 0, w - 1 do
      local v = y * w + x + 1
      if x < w - 1 and (rng:float() < 0.95 or v == 1) then
        mask[v] = mask[v] | 1
        mask[v + 1] = mask[v + 1] | 2
      end
      if y < h - 1 and (rng:float() < 0.95 or v == 1) then
        mask[v] = mask[v] | 4
        mask[v + w] = mask[v + w] | 8
      end
    end
  end
  return mask
end

--- Plain-Lua BFS from vertex 0 over the masks: distances (1-based table, INF unreached).
function M.bfs(mask, w)
  local n = #mask
  local dist = {}
  for i = 1, n do dist[i] = common.INF end
  dist[1] = 0
  local q, head = { 1 }, 1
  local step = { [1] = 1, [2] = -1, [4] = w, [8] = -w }
  while head <= #q do
    local v = q[head]
    head = head + 1
    local m, nd = mask[v], dist[v] + 1
    for bit, d in pairs(step) do
      if m & bit ~= 0 and dist[v + d] == common.INF then
        dist[v + d] = nd
        q[#q + 1] = v + d
      end
    end
  end
  return dist
end

--- setup(be, {width =, height =, seed =}) -> workload instance (see run.lua).
function M.setup(be, o)
  local w, h = o.width or 1024, o.height or o.width or 1024
  local n = w * h
  local mask = M.masks(w, h, o.seed or 1)
  local masks = be:buffer("u32", mask)
  local dist = be:buffer("u32", n)
  local level = be:buffer("u32", 1)
  local flag = be:buffer("u32", 1)
  local init = {}
  for i = 1, n do init[i] = common.INF end
  init[1] = 0
  local init_arr = require("vyre").array("u32", init)
  local inst = {
    flag = flag, output = dist, nodes = n, max_rounds = o.max_rounds or 4 * (w + h) + 16,
    edges = 0,
    -- a round reads dist and level for every vertex, and mask and neighbours at the frontier
    bytes_per_round = 4 * n,
    steps = {
      { common.kernel(be, EXPAND), { mask = masks, dist = dist, level = level, flag = flag,
        width = w }, { n = n } },
      common.advance_step(be, level),
    },
  }
  for i = 1, n do
    local m = mask[i]
    inst.edges = inst.edges + (m & 1) + (m >> 1 & 1) + (m >> 2 & 1) + (m >> 3 & 1)
  end
  function inst.reset()
    dist:upload(init_arr)
    level:zero()
    flag:zero()
  end
  function inst.check(rounds)
    local want = M.bfs(mask, w)
    local got = common.u32s(dist)
    local maxd = 0
    for i = 1, n do
      if got[i] ~= want[i] then
        return false, ("vertex %d: distance %d, plain BFS says %d"):format(i - 1, got[i], want[i])
      end
      if want[i] ~= common.INF and want[i] > maxd then maxd = want[i] end
    end
    if rounds ~= maxd + 1 then
      return false, ("%d rounds, but the farthest vertex is %d away (want %d rounds)"):format(
        rounds, maxd, maxd + 1)
    end
    return true, ("%d vertices, eccentricity %d"):format(n, maxd)
  end
  return inst
end

return M
