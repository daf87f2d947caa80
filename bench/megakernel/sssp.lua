-- bench/megakernel/sssp.lua — single-source shortest paths by worklist (Bellman–Ford with
-- a frontier) on an R-MAT graph in CSR with u32 weights 1..64 (graph.lua), from vertex 0.
-- A round is two steps over the current items:
--   1. sssp_snap: snap[i] = dist[item i]; queued[item] = 0 (it may be pushed again);
--   2. the expansion (layout "item", "subgroup" or "edges", vyre.lib.steps.expand; "edges"
--      adds the degree and scan steps before it): for each neighbour w, nd = snap[i] + wt[e]; if
--      nd is below dist[w] (a plain load: most relaxations fail and cost no atomic),
--      atomic min dist[w] nd; if that lowered dist[w] and w is not queued yet (atomic or
--      queued[w] 1 returned 0), push w.
-- Every item relaxes with its distance at the start of the round (the snapshot), so the
-- rounds and the set of pushed vertices do not depend on the order of the items or of
-- the atomics: dist after each round is min over the round's relaxations, on every
-- backend. The queued bits keep a vertex in the next frontier once (capacity = nodes).
-- Checked by a device kernel (no edge can still be relaxed; every reached vertex but the
-- source has a tight edge; the source is at 0) and, on small graphs, bit for bit against
-- Dijkstra in plain Lua.
local common = require("bench.megakernel.common")
local graph = require("bench.megakernel.graph")
local vyre = require("vyre")

local M = { name = "sssp", title = "SSSP by worklist (Bellman-Ford frontier), R-MAT, u32 weights",
  worklist = true }

M.LUA_LIMIT = 1 << 22

M.SNAP = [[
(program sssp_snap (workgroup 256)
  (buffer dist u32 read)
  (buffer snap u32 write)
  (buffer queued u32 write)
  (worklist frontier u32)
  (let i (gid x))
  (if (lt i (len frontier))
    (then
      (let v (load frontier i))
      (store snap i (load dist v))
      (store queued v 0u32))))]]

M.DECLS = [[
(buffer wt u32 read)
(buffer snap u32 read)
(buffer dist u32 read_write)
(buffer queued u32 read_write)]]

-- Per item ($I: its index in the round, where sssp_snap put its distance) and per entry
-- $E to neighbour $W, for lib.steps.expand. dist only falls during a round, so a stale
-- plain load is never below the current value: skipping the atomic when nd >= it loses
-- no relaxation.
M.PROLOGUE = "(let @d (load snap $I))"
M.VISIT = [[
(let @nd (add @d (load wt $E)))
(if (lt @nd (load dist $W))
  (then
    (let @old (atomic min dist $W @nd))
    (if (gt @old @nd)
      (then
        (let @q (atomic or queued $W 1u32))
        (if (eq @q 0u32) (then (push frontier $W)))))))]]

--- relax(be, g, bufs, wl [, o]) -> the relaxation steps of a round (lib.steps.expand, each
--- carrying expansion = {layout, reason}); bufs = {snap, dist, queued}; o: layout (nil:
--- the policy's from o.stats), stats, threads, chunk.
function M.relax(be, g, bufs, wl, o)
  o = o or {}
  return vyre.lib.steps.expand(be, { rowptr = g.rowptr, col = g.col, frontier = wl,
    decls = M.DECLS, args = { wt = g.wt, snap = bufs.snap, dist = bufs.dist,
      queued = bufs.queued }, prologue = M.PROLOGUE, visit = M.VISIT, layout = o.layout,
    stats = o.stats, name = "sssp_relax", threads = o.threads, chunk = o.chunk })
end

-- stats: [0] violations, [1] vertices reached, [2] largest distance.
M.CHECK = [[
(program sssp_check (workgroup 256)
  (buffer rowptr u32 read)
  (buffer col u32 read)
  (buffer wt u32 read)
  (buffer dist u32 read)
  (buffer stats u32 read_write)
  (let v (gid x))
  (if (lt v (sub (len rowptr) 1u32))
    (then
      (let dv (load dist v))
      (let seen (ne dv 4294967295u32))
      (let tight (select (eq v 0u32) 1u32 0u32))
      (let bad (select (land (eq v 0u32) (ne dv 0u32)) 1u32 0u32))
      (for e (load rowptr v) (load rowptr (add v 1u32)) 1u32
        (let dw (load dist (load col e)))
        (let we (load wt e))
        (if (land seen (gt dw (add dv we))) (then (set bad (add bad 1u32))))
        (if (land (lnot seen) (ne dw 4294967295u32)) (then (set bad (add bad 1u32))))
        (if (land (ne dw 4294967295u32) (eq (add dw we) dv)) (then (set tight 1u32))))
      (if (land seen (eq tight 0u32)) (then (set bad (add bad 1u32))))
      (if (ne bad 0u32) (then (atomic add stats 0u32 bad)))
      (if seen
        (then
          (atomic add stats 1u32 1u32)
          (atomic max stats 2u32 dv))))))]]

--- Dijkstra in plain Lua from vertex 0 (a binary heap), over 1-based CSR tables.
function M.lua_dist(rowptr, col, wt)
  local INF = common.INF
  local n = #rowptr - 1
  local dist = {}
  for v = 1, n do dist[v] = INF end
  dist[1] = 0
  local heap = { { 0, 0 } }
  local function push(d, v)
    heap[#heap + 1] = { d, v }
    local i = #heap
    while i > 1 do
      local p = i // 2
      if heap[p][1] <= heap[i][1] then break end
      heap[p], heap[i] = heap[i], heap[p]
      i = p
    end
  end
  local function pop()
    local top = heap[1]
    heap[1] = heap[#heap]
    heap[#heap] = nil
    local i = 1
    while true do
      local l, r, m = 2 * i, 2 * i + 1, i
      if heap[l] and heap[l][1] < heap[m][1] then m = l end
      if heap[r] and heap[r][1] < heap[m][1] then m = r end
      if m == i then break end
      heap[m], heap[i] = heap[i], heap[m]
      i = m
    end
    return top
  end
  while #heap > 0 do
    local t = pop()
    local d, v = t[1], t[2]
    if d == dist[v + 1] then
      for e = rowptr[v + 1] + 1, rowptr[v + 2] do
        local w, nd = col[e], d + wt[e]
        if nd < dist[w + 1] then
          dist[w + 1] = nd
          push(nd, w)
        end
      end
    end
  end
  return dist
end

function M.setup(be, o)
  local g = graph.shared(be, { scale = o.scale, edge_factor = o.edge_factor, seed = o.seed,
    weights = true })
  local dstats = graph.degree_stats(g.rowptr)
  local dist = be:buffer("u32", g.nodes)
  local snap, queued = be:buffer("u32", g.nodes), be:buffer("u32", g.nodes)
  local wl = be:worklist("u32", g.nodes)
  local relax = M.relax(be, g, { snap = snap, dist = dist, queued = queued }, wl,
    { layout = o.layout, stats = dstats, threads = o.edge_threads, chunk = o.edge_chunk })
  local x = relax[#relax].expansion
  local inst = {
    worklist = wl, output = dist, nodes = g.nodes, edges = g.edges, graph = g,
    max_rounds = o.max_rounds or 100000, degree_stats = dstats,
    layout = { layout = x.layout, reason = x.reason }, -- the steps carry it; be:plan shows it
    bytes_per_round = 16 * g.entries // 8,
    steps = {
      { common.kernel(be, M.SNAP), { dist = dist, snap = snap, queued = queued, frontier = wl },
        { n = wl } },
    },
  }
  for _, st in ipairs(relax) do inst.steps[#inst.steps + 1] = st end
  function inst.reset()
    dist:fill(common.INF)
    dist:upload({ 0 })
    queued:zero()
    wl:clear()
    wl:push({ 0 })
  end
  function inst.check()
    local stats = be:buffer("u32", 3)
    be:sequence({ { common.kernel(be, M.CHECK), { rowptr = g.rowptr, col = g.col, wt = g.wt,
      dist = dist, stats = stats }, { n = g.nodes } } })
    local s = stats:download():totable()
    stats:free()
    if s[1] ~= 0 then return false, ("%d shortest-path rule violations"):format(s[1]) end
    local msg = ("%d of %d vertices reached, largest distance %d"):format(s[2], g.nodes, s[3])
    if g.entries > M.LUA_LIMIT then return true, msg .. " (device check; too large for Lua)" end
    local want = M.lua_dist(g.rowptr:download():totable(), g.col:download():totable(),
      g.wt:download():totable())
    local got = dist:download():totable()
    for v = 1, g.nodes do
      if got[v] ~= want[v] then
        return false, ("dist[%d] = %d, Dijkstra in plain Lua says %d"):format(v - 1, got[v],
          want[v])
      end
    end
    return true, msg .. "; equal to Dijkstra in plain Lua"
  end
  return inst
end

--- A variant of M with the layout fixed (the bench compares it with the policy's).
function M.with_layout(layout, name)
  local V = setmetatable({ name = name or (M.name .. "_" .. layout),
    title = M.title .. ", layout " .. layout }, { __index = M })
  function V.setup(be, o)
    local c = {}
    for key, v in pairs(o) do c[key] = v end
    c.layout = layout
    return M.setup(be, c)
  end
  return V
end

return M
