-- bench/megakernel/bfs_wl.lua — BFS by worklist on an R-MAT graph in CSR (issue 23 §3):
-- the frontier is a vyre.Worklist; a round expands every current vertex (layout "item",
-- "subgroup" or "edges": vyre.lib.steps.expand) and pushes each neighbour it reaches
-- first (the cas from unseen to level + 1 succeeds once per vertex, so the next
-- frontier holds every vertex once, in an order that may differ between backends; the
-- levels do not). Rounds run until one pushes nothing: depth + 1 rounds.
-- Checked by a device kernel the way Graph500 validates a BFS (every edge joins two
-- reached vertices at most one level apart, or two unreached ones; every reached vertex
-- but the source has a neighbour one level closer) and, on graphs of at most
-- M.LUA_LIMIT entries, bit for bit against a queue BFS in plain Lua.
local common = require("bench.megakernel.common")
local graph = require("bench.megakernel.graph")
local vyre = require("vyre")

local M = { name = "bfs_wl", title = "BFS by worklist, R-MAT graph (CSR)", worklist = true }

M.LUA_LIMIT = 1 << 22

M.DECLS = "(buffer level u32 read_write)"

-- What the round does per vertex v on the frontier ($V) and per neighbour ($W), for
-- lib.steps.expand: the neighbours' level is v's + 1. A plain load first: a neighbour
-- already reached (most of them, in the large rounds) costs no atomic; a stale unseen only
-- costs a cas that fails.
M.PROLOGUE = "(let @d (add (load level $V) 1u32))"
M.VISIT = [[
(if (eq (load level $W) 4294967295u32)
  (then
    (let @old (atomic cas level $W 4294967295u32 @d))
    (if (eq @old 4294967295u32) (then (push frontier $W)))))]]

--- round(be, g, level, wl [, o]) -> the steps of one top-down round (lib.steps.expand:
--- one step, or for "edges" the degrees, their scan and the balanced walk, each carrying
--- expansion = {layout, reason}). o: layout (nil: the policy's from o.stats), stats,
--- mode (a u32 Buffer: the direction-optimising BFS's push round, idle while mode[0]
--- says pull), threads and chunk (the edges layout's grid and chunk; tests).
function M.round(be, g, level, wl, o)
  o = o or {}
  return vyre.lib.steps.expand(be, { rowptr = g.rowptr, col = g.col, frontier = wl,
    decls = o.mode and (M.DECLS .. "\n(buffer mode u32 read)") or M.DECLS,
    args = { level = level, mode = o.mode }, guard = o.mode and "(eq (load mode 0u32) 0u32)",
    prologue = M.PROLOGUE, visit = M.VISIT, layout = o.layout, stats = o.stats,
    name = o.mode and "bfs_do_push" or "bfs_wl", threads = o.threads, chunk = o.chunk })
end

-- Direction-optimising BFS (Beamer et al.): a round is decide, push, pull. decide (one
-- invocation) sets mode[0] = pull while the frontier holds more than 1/DIV of the
-- vertices, and mode[1] = the frontier's level (all its items share it). push is the
-- top-down round above, idle in pull mode; pull (an invocation per vertex, idle in push
-- mode) lets each unreached vertex scan its row for a neighbour on the frontier's level,
-- take level + 1 and push itself, stopping at the first. Only v writes level[v] in pull,
-- and a vertex reached this round has level + 1, never the level looked for, so levels,
-- rounds and the pushed set are those of the top-down BFS on every backend.
M.DIV = 20

M.DECIDE = [[
(program bfs_do_decide (workgroup 1)
  (buffer level u32 read)
  (buffer mode u32 write)
  (param div u32)
  (worklist frontier u32)
  (let n (len frontier))
  (store mode 0u32 (select (gt (mul n div) (len level)) 1u32 0u32))
  (store mode 1u32 (load level (load frontier 0u32))))]]

M.PULL = [[
(program bfs_do_pull (workgroup 256)
  (buffer rowptr u32 read)
  (buffer col u32 read)
  (buffer level u32 read_write)
  (buffer mode u32 read)
  (worklist frontier u32)
  (let v (gid x))
  (if (land (ne (load mode 0u32) 0u32) (lt v (len level)))
    (then
      (if (eq (load level v) 4294967295u32)
        (then
          (let cur (load mode 1u32))
          (for e (load rowptr v) (load rowptr (add v 1u32)) 1u32
            (if (eq (load level (load col e)) cur)
              (then
                (store level v (add cur 1u32))
                (push frontier v)
                (break)))))))))]]

-- stats: [0] edges breaking the rules, [1] deepest level, [2] vertices reached, [3] the
-- entries of reached rows (the edges traversed, counted twice: once per direction).
M.CHECK = [[
(program bfs_wl_check (workgroup 256)
  (buffer rowptr u32 read)
  (buffer col u32 read)
  (buffer level u32 read)
  (buffer stats u32 read_write)
  (let v (gid x))
  (if (lt v (sub (len rowptr) 1u32))
    (then
      (let lv (load level v))
      (let seen (ne lv 4294967295u32))
      (let parent (select (eq v 0u32) 1u32 0u32))
      (let bad (select (land (eq v 0u32) (ne lv 0u32)) 1u32 0u32))
      (let rb (load rowptr v))
      (let re (load rowptr (add v 1u32)))
      (for e rb re 1u32
        (let lw (load level (load col e)))
        (if (ne seen (ne lw 4294967295u32)) (then (set bad (add bad 1u32))))
        (if (land seen (lor (lt (add lw 1u32) lv) (lt (add lv 1u32) lw)))
          (then (set bad (add bad 1u32))))
        (if (land seen (eq (add lw 1u32) lv)) (then (set parent 1u32))))
      (if (land seen (eq parent 0u32)) (then (set bad (add bad 1u32))))
      (if (ne bad 0u32) (then (atomic add stats 0u32 bad)))
      (if seen
        (then
          (atomic max stats 1u32 lv)
          (atomic add stats 2u32 1u32)
          (atomic add stats 3u32 (sub re rb)))))))]]

--- Plain Lua BFS levels from vertex 0 over 1-based CSR tables.
function M.lua_levels(rowptr, col)
  local INF = common.INF
  local n = #rowptr - 1
  local lv = {}
  for v = 1, n do lv[v] = INF end
  lv[1] = 0
  local q, h = { 0 }, 1
  while q[h] do
    local v = q[h]
    h = h + 1
    local d = lv[v + 1] + 1
    for e = rowptr[v + 1] + 1, rowptr[v + 2] do
      local w = col[e]
      if lv[w + 1] == INF then
        lv[w + 1] = d
        q[#q + 1] = w
      end
    end
  end
  return lv
end

--- device_check(be, g, level, rounds) -> ok, msg, stats {bad, depth, reached, entries}.
function M.device_check(be, g, level, rounds)
  local stats = be:buffer("u32", 4)
  be:sequence({ { common.kernel(be, M.CHECK), { rowptr = g.rowptr, col = g.col, level = level,
    stats = stats }, { n = g.nodes } } })
  local s = stats:download():totable()
  stats:free()
  local st = { bad = s[1], depth = s[2], reached = s[3], entries = s[4] }
  if st.bad ~= 0 then
    return false, ("%d Graph500 rule violations in the levels"):format(st.bad), st
  end
  if rounds ~= st.depth + 1 then
    return false, ("%d rounds, depth %d (want %d rounds)"):format(rounds, st.depth,
      st.depth + 1), st
  end
  return true, ("%d of %d vertices reached, depth %d"):format(st.reached, g.nodes, st.depth), st
end

--- setup(be, {scale, edge_factor, seed [, layout]}) -> a worklist workload instance.
function M.setup(be, o)
  local g = graph.shared(be, { scale = o.scale, edge_factor = o.edge_factor, seed = o.seed })
  local dstats = graph.degree_stats(g.rowptr)
  local level = be:buffer("u32", g.nodes)
  local wl = be:worklist("u32", g.nodes)
  local mode = o.direction and be:buffer("u32", 2) or nil
  -- the push round: one step, or ("edges") degrees, their scan and the balanced walk
  local steps = M.round(be, g, level, wl, { layout = o.layout, stats = dstats, mode = mode,
    threads = o.edge_threads, chunk = o.edge_chunk })
  local x = steps[#steps].expansion
  if o.direction then
    table.insert(steps, 1, { common.kernel(be, M.DECIDE), { level = level, mode = mode,
      div = M.DIV, frontier = wl }, { n = 1 } })
    steps[#steps + 1] = { common.kernel(be, M.PULL), { rowptr = g.rowptr, col = g.col,
      level = level, mode = mode, frontier = wl }, { n = g.nodes } }
  end
  local inst = {
    worklist = wl, output = level, nodes = g.nodes, edges = g.edges, graph = g,
    max_rounds = o.max_rounds or 100000, degree_stats = dstats,
    -- the expansion layout and why (the steps carry it; be:plan shows it)
    layout = { layout = x.layout, reason = x.reason },
    -- each reached row once, its entries' col and level: about 12 bytes an entry per BFS
    bytes_per_round = 12 * g.entries // 8,
    steps = steps, direction = o.direction or false,
  }
  function inst.reset()
    level:fill(common.INF)
    level:upload({ 0 })
    wl:clear()
    wl:push({ 0 })
  end
  function inst.check(rounds)
    local ok, msg, st = M.device_check(be, g, level, rounds)
    inst.traversed = st.entries // 2
    if not ok then return ok, msg end
    if g.entries > M.LUA_LIMIT then return ok, msg .. " (Graph500 rules on the device)" end
    local want = M.lua_levels(g.rowptr:download():totable(), g.col:download():totable())
    local got = level:download():totable()
    for v = 1, g.nodes do
      if got[v] ~= want[v] then
        return false, ("level[%d] = %d, plain Lua BFS says %d"):format(v - 1, got[v], want[v])
      end
    end
    return true, msg .. "; equal to plain Lua BFS"
  end
  return inst
end

--- A variant of M with the layout fixed (nil: the policy's) and, with direction, the
--- direction-optimising rounds (the bench compares them).
function M.with_layout(layout, name, direction)
  local V = setmetatable({ name = name or (M.name .. "_" .. layout),
    title = M.title .. (layout and (", layout " .. layout) or "")
      .. (direction and ", direction-optimising" or "") }, { __index = M })
  function V.setup(be, o)
    local c = {}
    for key, v in pairs(o) do c[key] = v end
    c.layout, c.direction = layout, direction
    return M.setup(be, c)
  end
  return V
end

return M
