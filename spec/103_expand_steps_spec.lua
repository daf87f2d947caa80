-- 103: lib.steps.expand (issue 23 §3; docs/GRID.md "Expansion layouts"): one worklist
-- round over a CSR graph in the layout given ("item", "subgroup", "edges") or, without
-- one, in vyre.policy.choose_expansion's. BFS and SSSP written with it give plain Lua's
-- levels and Dijkstra's distances in every layout, on small R-MAT graphs and on
-- hand-built ones (a hub of degree >= 32 for the subgroup walk, a grid smaller than the
-- round for the edges layout's stride loop); every step it returns carries expansion =
-- {layout, reason}, and be:plan shows it (plan.steps[i].expansion, plan.expansion, the
-- text of tostring(plan) and plan:dot()); the policy's choice follows the degree
-- statistics (a ring: item; a hub among a ring: subgroup; a star: edges). Misuse raises
-- with a Fix. On the reference backend, the fake CUDA driver (#fakecuda) and a GPU (#gpu).
local vyre = require("vyre")
local lib = require("vyre.lib")
local H = require("spec.helpers")
local policy = require("vyre.policy")
local graph = require("bench.megakernel.graph")
local bfs = require("bench.megakernel.bfs_wl")
local sssp = require("bench.megakernel.sssp")

local LAYOUTS = { "item", "subgroup", "edges" }
local INF = 0xffffffff

-- A CSR graph from undirected edges {a, b} over n vertices (0-based), rows sorted, with
-- weights 1 + (a + b) % 7: {rowptr, col, wt} as 1-based tables.
local function csr(n, edges)
  local adj = {}
  for v = 1, n do adj[v] = {} end
  for _, e in ipairs(edges) do
    table.insert(adj[e[1] + 1], e[2])
    table.insert(adj[e[2] + 1], e[1])
  end
  local rowptr, col, wt = { 0 }, {}, {}
  for v = 1, n do
    table.sort(adj[v])
    for _, w in ipairs(adj[v]) do
      col[#col + 1] = w
      wt[#wt + 1] = 1 + (v - 1 + w) % 7
    end
    rowptr[v + 1] = #col
  end
  return { rowptr = rowptr, col = col, wt = wt, n = n }
end

local function ring(n, edges)
  edges = edges or {}
  for v = 0, n - 1 do edges[#edges + 1] = { v, (v + 1) % n } end
  return edges
end

-- star(n): vertex 0 joined to every other; hub_ring(n): a ring, and vertex 0 joined to
-- every other vertex too (degree n - 1).
local function star(n)
  local edges = {}
  for v = 1, n - 1 do edges[#edges + 1] = { 0, v } end
  return csr(n, edges)
end

local function hub_ring(n)
  local edges = ring(n)
  for v = 2, n - 2 do edges[#edges + 1] = { 0, v } end
  return csr(n, edges)
end

-- The graph's buffers on be: {rowptr, col, wt, n, t (the tables)}.
local function upload(be, t)
  return { rowptr = be:buffer("u32", t.rowptr), col = be:buffer("u32", t.col),
    wt = be:buffer("u32", t.wt), n = t.n, t = t }
end

local function rmat(be, scale, ef, seed)
  local g = graph.build(be, { scale = scale, edge_factor = ef, seed = seed, weights = true })
  local t = { rowptr = g.rowptr:download():totable(), col = g.col:download():totable(),
    wt = g.wt:download():totable(), n = g.nodes }
  return { rowptr = g.rowptr, col = g.col, wt = g.wt, n = g.nodes, t = t }
end

-- BFS from vertex 0 with lib.steps.expand (o: layout, stats, threads, chunk); returns the
-- levels, the rounds, the steps and be:plan's plan of them.
local function run_bfs(be, g, o)
  local level = be:buffer("u32", vyre.array("u32", g.n):fill(INF))
  level:upload({ 0 })
  local wl = be:worklist("u32", g.n)
  wl:push({ 0 })
  local steps = lib.steps.expand(be, { rowptr = g.rowptr, col = g.col, frontier = wl,
    decls = "(buffer level u32 read_write)", args = { level = level },
    prologue = "(let @d (add (load level $V) 1u32))",
    visit = [[
(if (eq (load level $W) 4294967295u32)
  (then
    (let @old (atomic cas level $W 4294967295u32 @d))
    (if (eq @old 4294967295u32) (then (push frontier $W)))))]],
    layout = o.layout, stats = o.stats, threads = o.threads, chunk = o.chunk, name = "bfs" })
  local opts = { converge = { worklist = wl, max = 10000 } }
  local plan = be:plan(steps, opts)
  local rounds = be:megakernel(steps, opts)
  return level:download():totable(), rounds, steps, plan
end

-- SSSP from vertex 0: bench/megakernel/sssp.lua's snapshot step, then its relaxation
-- built by lib.steps.expand (sssp.relax). Returns the distances, the steps and the plan.
local function run_sssp(be, g, o)
  local dist = be:buffer("u32", vyre.array("u32", g.n):fill(INF))
  dist:upload({ 0 })
  local snap, queued = be:buffer("u32", g.n), be:buffer("u32", g.n)
  queued:zero()
  local wl = be:worklist("u32", g.n)
  wl:push({ 0 })
  local steps = { { be:compile(vyre.parse(sssp.SNAP)), { dist = dist, snap = snap,
    queued = queued, frontier = wl }, { n = wl } } }
  for _, s in ipairs(sssp.relax(be, g, { snap = snap, dist = dist, queued = queued }, wl, o)) do
    steps[#steps + 1] = s
  end
  local opts = { converge = { worklist = wl, max = 10000 } }
  local plan = be:plan(steps, opts)
  be:megakernel(steps, opts)
  return dist:download():totable(), steps, plan
end

-- The plan shows layout on the steps that carry it (first .. #steps), and nowhere else.
local function shows(plan, steps, layout, first)
  assert.are.equal(layout, plan.expansion.layout)
  assert.is_string(plan.expansion.reason)
  assert.are.same({ layout }, plan.expansion.layouts)
  local want = {}
  for i = first, #steps do
    want[#want + 1] = i
    assert.are.same(steps[i].expansion, plan.steps[i].expansion)
    assert.are.equal(layout, plan.steps[i].expansion.layout)
  end
  for i = 1, first - 1 do assert.is_nil(plan.steps[i].expansion) end
  assert.are.same(want, plan.expansion.steps)
  local text = tostring(plan)
  assert.matches("expansion: " .. layout .. " (step", text, 1, true)
  assert.matches(plan.expansion.reason, text, 1, true)
  assert.matches("(" .. layout .. ")\"]", plan:dot(), 1, true)
end

local function suite(open, big)
  local be
  setup(function() be = open() end)

  it("BFS: every layout gives plain Lua's levels and be:plan shows the layout", function()
    local graphs = { rmat = rmat(be, 6, 4, 1), rmat8 = rmat(be, 8, 8, 3),
      hub = upload(be, hub_ring(90)) }
    if big then graphs.rmat14 = rmat(be, 14, 16, 2) end
    for name, g in pairs(graphs) do
      local want = bfs.lua_levels(g.t.rowptr, g.t.col)
      local depth = 0
      for _, l in ipairs(want) do if l ~= INF and l > depth then depth = l end end
      for _, layout in ipairs(LAYOUTS) do
        local got, rounds, steps, plan = run_bfs(be, g, { layout = layout })
        assert.are.same(want, got, name .. " " .. layout)
        assert.are.equal(depth + 1, rounds, name .. " " .. layout .. " rounds")
        assert.are.equal(layout == "edges" and 3 or 1, #steps)
        for _, s in ipairs(steps) do
          assert.are.same({ layout = layout, reason = "forced (opts.layout)" }, s.expansion)
        end
        shows(plan, steps, layout, 1)
      end
      -- the edges layout on a grid smaller than the round (the stride loop), chunks of 1
      -- and 3 entries
      for _, chunk in ipairs({ 1, 3 }) do
        local got, _, steps = run_bfs(be, g, { layout = "edges", threads = 256, chunk = chunk })
        assert.are.equal(256, steps[#steps][3].n)
        assert.are.same(want, got, name .. " edges chunk " .. chunk)
      end
    end
  end)

  it("SSSP: every layout gives Dijkstra's distances and be:plan shows the layout", function()
    local graphs = { rmat = rmat(be, 6, 4, 1), rmat7 = rmat(be, 7, 8, 3),
      hub = upload(be, hub_ring(90)) }
    if big then graphs.rmat14 = rmat(be, 14, 16, 2) end
    for name, g in pairs(graphs) do
      local want = sssp.lua_dist(g.t.rowptr, g.t.col, g.t.wt)
      for _, layout in ipairs(LAYOUTS) do
        local got, steps, plan = run_sssp(be, g, { layout = layout })
        assert.are.same(want, got, name .. " " .. layout)
        -- the snapshot step carries no expansion; the relaxation's steps do
        shows(plan, steps, layout, 2)
        assert.is_string(plan.steps[1].name)
      end
    end
  end)

  it("without a layout, the policy's choice follows the degree statistics", function()
    local cases = {
      { csr(120, ring(120)), "item", "few heavy rows" },
      -- the hub: 199 of 794 entries (>= a quarter), >= 128 long, < 256 x the mean
      { hub_ring(200), "subgroup", "skewed degrees" },
      { star(1200), "edges", "hub-dominated degrees" },
    }
    for _, c in ipairs(cases) do
      local g = upload(be, c[1])
      local st = policy.degree_stats(c[1].rowptr)
      assert.are.same(st, policy.degree_stats(g.rowptr)) -- a Buffer reads the same
      assert.are.equal(c[2], policy.choose_expansion(st).layout)
      -- no stats: lib.steps.expand counts them from rowptr; with stats: those
      for _, stats in ipairs({ false, st }) do
        local got, _, steps, plan = run_bfs(be, g, { stats = stats or nil })
        assert.are.same(bfs.lua_levels(c[1].rowptr, c[1].col), got, c[2])
        assert.are.equal(c[2], steps[#steps].expansion.layout)
        assert.matches(c[3], steps[#steps].expansion.reason, 1, true)
        shows(plan, steps, c[2], 1)
      end
    end
  end)
end

describe("lib.steps.expand on the reference", function()
  suite(function() return vyre.backend("reference") end)

  after_each(function() policy.expansion = policy.default_expansion end)

  it("a user's expansion policy decides, and its reason reaches the plan", function()
    local be = vyre.backend("reference")
    policy.expansion = function(st)
      return { layout = st.max_degree > 2 and "edges" or "item", reason = "test rule" }
    end
    local g = upload(be, hub_ring(40))
    local got, _, steps, plan = run_bfs(be, g, {})
    assert.are.same(bfs.lua_levels(g.t.rowptr, g.t.col), got)
    assert.are.same({ layout = "edges", reason = "test rule" }, steps[1].expansion)
    assert.matches("expansion: edges (steps 1, 2, 3) — test rule", tostring(plan), 1, true)
  end)

  it("plans of other steps are as before; two layouts in one plan are both shown", function()
    local be = vyre.backend("reference")
    local k = be:compile(vyre.parse("(program one (workgroup 64) (buffer a u32 read_write) "
      .. "(store a (gid x) 1u32))"))
    local a = be:buffer("u32", 64)
    local p = be:plan({ { k, { a = a }, { n = 64 } } })
    assert.is_nil(p.expansion)
    assert.is_nil(p.steps)
    assert.is_nil(tostring(p):find("expansion", 1, true))
    -- an item round then an edges round over two graphs, one steps list
    local g1, g2 = upload(be, csr(40, ring(40))), upload(be, star(50))
    local hits = be:buffer("u32", 50)
    local function round(g, wl, layout)
      return lib.steps.expand(be, { rowptr = g.rowptr, col = g.col, frontier = wl,
        decls = "(buffer hits u32 read_write)", args = { hits = hits },
        visit = "(atomic add hits $W 1u32)", layout = layout })
    end
    local w1, w2 = be:worklist("u32", 40), be:worklist("u32", 50)
    local steps = round(g1, w1, "item")
    for _, s in ipairs(round(g2, w2, "edges")) do steps[#steps + 1] = s end
    p = be:plan(steps)
    assert.are.same({ "item", "edges" }, p.expansion.layouts)
    assert.are.equal("item", p.expansion.layout)
    assert.are.same({ 1, 2, 3, 4 }, p.expansion.steps)
    assert.matches("expansion: item, edges (steps 1, 2, 3, 4)", tostring(p), 1, true)
    -- and they run: every entry of the items pushed once is visited once
    hits:zero()
    w1:push({ 0, 1, 2 })
    w2:push({ 0 })
    be:sequence(steps)
    local h = hits:download():totable()
    -- ring: 0, 1, 2 visit 39, 1 / 0, 2 / 1, 3; star: 0 visits 1 .. 49
    assert.are.same({ 1, 2 + 1, 1 + 1, 1 + 1, 1 }, { h[1], h[2], h[3], h[4], h[5] })
    assert.are.equal(1 + 1, h[40])
    assert.are.equal(1, h[41])
  end)

  it("misuse raises with a Fix", function()
    local be = vyre.backend("reference")
    local g = upload(be, csr(10, ring(10)))
    local wl = be:worklist("u32", 10)
    local base = { rowptr = g.rowptr, col = g.col, frontier = wl, visit = "(push frontier $W)" }
    local function with(extra)
      local o = {}
      for k, v in pairs(base) do o[k] = v end
      for k, v in pairs(extra) do o[k] = v end
      return o
    end
    local function err(o, want)
      local e = H.error_of(lib.steps.expand, be, o)
      assert.matches("vyre.lib.steps.expand: ", e, 1, true)
      assert.matches(want, e, 1, true)
      assert.matches("Fix:", e, 1, true)
    end
    err(with({ visit = false }), "opts.visit must be text")
    err(with({ visit = "(push frontier $Q)" }), "opts.visit uses $Q")
    err(with({ prologue = "(let @x $W)" }), "opts.prologue uses $W")
    err(with({ layout = "warp" }), "opts.layout 'warp' is not")
    err(with({ args = { escan = g.col } }), "opts.args binds 'escan'")
    err(with({ frontier = g.col }), "opts.frontier must be a u32 vyre.Worklist")
    err(with({ rowptr = be:buffer("f32", 11) }), "opts.rowptr has type f32")
    err(with({ colour = 1 }), "unknown option 'colour'")
    err(with({ chunk = 0 }), "opts.chunk must be an integer >= 1")
    err(with({ name = "two words" }), "opts.name 'two words' is not a program name")
    -- a name the texts use but opts.decls does not declare: the layout and the cause
    err(with({ visit = "(store hits $W 1u32)", layout = "subgroup" }),
      "the subgroup layout's kernel does not compile")
    -- a plain let in the visit is bound twice by the subgroup layout: @name is the fix
    err(with({ visit = "(let x $W) (push frontier x)", layout = "subgroup" }), "@name")
    assert.matches("Fix:", H.error_of(lib.steps.expand, be, nil), 1, true)
    assert.matches("argument 1 must be a vyre.Backend", H.error_of(lib.steps.expand, {}, base),
      1, true)
    -- the statistics
    local e = H.error_of(policy.degree_stats, { 0, 3, 2 })
    assert.matches("vyre.policy.degree_stats: rowptr[2] = 3, rowptr[3] = 2", e, 1, true)
    assert.matches("Fix:", e, 1, true)
    assert.matches("rowptr must be a table", H.error_of(policy.degree_stats, "x"), 1, true)
    assert.matches("subgroup must be an integer", H.error_of(policy.degree_stats, { 0 }, 0), 1,
      true)
    assert.matches("rowptr is empty", H.error_of(policy.degree_stats, {}), 1, true)
  end)
end)

describe("lib.steps.expand on the fake CUDA driver #fakecuda", function()
  if not H.fake_loaded() then
    it("needs the fake driver", function() pending("run with VYRE_LIBCUDA=build/fakecuda/"
      .. "libcuda.so.1 (scripts/test.sh's fake pass)") end)
    return
  end
  suite(H.fake_backend)
end)

describe("lib.steps.expand on a GPU #gpu", function()
  local ok, cuda = pcall(require, "vyre.cuda")
  if not ok or not cuda.available() then
    it("needs CUDA", function() pending("CUDA is not usable here") end)
    return
  end
  suite(function() return assert(cuda.device(0)) end, true)
end)
