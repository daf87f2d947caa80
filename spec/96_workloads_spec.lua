-- 96: the worklist workloads of issue 23 §3 (bench/megakernel: graph, bfs_wl, sssp, cc,
-- pagerank; the examples bfs_rmat, sssp, cc, pagerank): the device-built R-MAT CSR equals
-- the plain Lua build; BFS levels (the three expansion layouts: item, subgroup, edges),
-- SSSP distances (the three layouts) and CC labels equal plain Lua bit for bit, PageRank
-- is within its tolerance of the Lua model, in every run mode (host loop, graph,
-- megakernel), each mode giving the same bytes and rounds; the checks refuse a corrupted
-- result; vyre.policy.expansion chooses by degree statistics ("edges" for a hub of at
-- least 256 x the mean degree) and refuses bad input with a Fix. Every result is bit for
-- bit the same on the reference and on the fake CUDA driver (#fakecuda) and on a GPU (#gpu), where
-- the items of a round arrive in another order. The fake interprets every kernel on the
-- CPU, so there (unless VYRE_FULL=1) the scale-15 edges case (the device-counted scan's
-- three passes) runs BFS in the host loop only: no SSSP, no other modes, no subgroup twin.
local vyre = require("vyre")
local H = require("spec.helpers")
local common = require("bench.megakernel.common")
local graph = require("bench.megakernel.graph")
local expand = require("vyre.lib.expand")

local LAYOUTS = expand.LAYOUTS

local W = {
  bfs_wl = require("bench.megakernel.bfs_wl"),
  sssp = require("bench.megakernel.sssp"),
  cc = require("bench.megakernel.cc"),
  pagerank = require("bench.megakernel.pagerank"),
}

local MODES = { "host_loop", "graph", "megakernel" }

-- Runs inst in a mode from a fresh reset; returns rounds and the output's bytes.
local function run(be, inst, mode)
  inst.reset()
  local rounds = common[mode](be, inst)
  return rounds, common.bytes(inst.output)
end

-- Every mode: the check passes, the modes agree on bytes and rounds. Returns them.
local function all_modes(be, inst, what)
  local rounds, bytes
  for _, mode in ipairs(MODES) do
    local r, b = run(be, inst, mode)
    local ok, msg = inst.check(r)
    assert.is_true(ok, ("%s, %s: %s"):format(what, mode, tostring(msg)))
    if rounds then
      assert.are.equal(rounds, r, what .. " rounds, " .. mode)
      assert.is_true(bytes == b, what .. " bytes, " .. mode)
    end
    rounds, bytes = r, b
  end
  return rounds, bytes
end

-- The shapes every backend runs: {scale, edge_factor, seed}.
local SHAPES = { { 6, 4, 1 }, { 7, 8, 3 }, { 8, 4, 9 } }

local function size(shape, extra)
  local o = { scale = shape[1], edge_factor = shape[2], seed = shape[3] }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

-- name -> {shape key -> {rounds, bytes}} of the reference, for the other backends.
local reference_results = {}

local function record(be, name, key, rounds, bytes)
  if be.name == "reference" then
    reference_results[name] = reference_results[name] or {}
    reference_results[name][key] = { rounds = rounds, bytes = bytes }
  else
    local want = reference_results[name] and reference_results[name][key]
    if want then
      assert.are.equal(want.rounds, rounds, name .. " " .. key .. ": rounds vs the reference")
      assert.is_true(want.bytes == bytes, name .. " " .. key .. ": bytes vs the reference")
    end
  end
end

-- trim: the fake pass's cut of the scale-15 edges case (the header says which).
local function backend_suite(get_be, trim)
  trim = trim and os.getenv("VYRE_FULL") ~= "1"
  local be
  setup(function() be = get_be() end)

  it("builds the R-MAT CSR that plain Lua builds (rows sorted, symmetric weights)", function()
    for _, sh in ipairs(SHAPES) do
      local g = graph.build(be, { scale = sh[1], edge_factor = sh[2], seed = sh[3],
        weights = true })
      local want = graph.lua_csr(sh[1], sh[2], sh[3])
      assert.are.same(want.rowptr, g.rowptr:download():totable())
      assert.are.same(want.col, g.col:download():totable())
      assert.are.same(want.wt, g.wt:download():totable())
      assert.are.equal(2 * (sh[2] << sh[1]), g.entries)
    end
  end)

  it("BFS by worklist: levels equal plain Lua BFS in every layout and every mode", function()
    for _, sh in ipairs(SHAPES) do
      local key = table.concat(sh, "/")
      local layout_bytes
      for _, layout in ipairs(LAYOUTS) do
        local inst = W.bfs_wl.setup(be, size(sh, { layout = layout }))
        local rounds, bytes = all_modes(be, inst, "bfs_wl " .. layout .. " " .. key)
        local ok, msg = inst.check(rounds)
        assert.matches("equal to plain Lua BFS", msg, 1, true)
        assert.is_true(ok)
        assert.is_true(inst.traversed > 0)
        -- the layouts differ in who walks a row, not in the levels
        if layout_bytes then assert.is_true(layout_bytes == bytes, key .. " layouts") end
        layout_bytes = bytes
        record(be, "bfs_wl", key, rounds, bytes)
      end
    end
  end)

  it("direction-optimising BFS: the top-down levels and rounds, push only or pull only too",
    function()
      local B = W.bfs_wl
      local div = B.DIV
      for _, sh in ipairs(SHAPES) do
        local key = table.concat(sh, "/")
        -- 0: never pull; 2^20: pull from the second round on; the default in between
        for _, d in ipairs({ div, 0, 1 << 20 }) do
          B.DIV = d
          local ok, err = pcall(function()
            for _, layout in ipairs(LAYOUTS) do
              local inst = B.setup(be, size(sh, { layout = layout, direction = true }))
              -- decide, the push round (one step, or degrees + scan + walk: the steps
              -- lib.steps.expand built carry the layout), pull
              local push = 0
              for _, st in ipairs(inst.steps) do
                if st.expansion then
                  assert.are.equal(layout, st.expansion.layout)
                  push = push + 1
                end
              end
              assert.are.equal(2 + push, #inst.steps)
              assert.is_true(layout == "edges" and push >= 3 or push == 1)
              local rounds, bytes = all_modes(be, inst, ("bfs_do %s div %d %s"):format(layout,
                d, key))
              assert.matches("equal to plain Lua BFS", select(2, inst.check(rounds)), 1, true)
              record(be, "bfs_wl", key, rounds, bytes) -- the top-down BFS's results
            end
          end)
          B.DIV = div
          assert(ok, err)
        end
      end
    end)

  it("SSSP by worklist: distances equal Dijkstra in every layout and every mode", function()
    for _, sh in ipairs(SHAPES) do
      local key = table.concat(sh, "/")
      for _, layout in ipairs(LAYOUTS) do
        local inst = W.sssp.setup(be, size(sh, { layout = layout }))
        local rounds, bytes = all_modes(be, inst, "sssp " .. layout .. " " .. key)
        assert.matches("equal to Dijkstra", select(2, inst.check(rounds)), 1, true)
        record(be, "sssp", key, rounds, bytes)
      end
    end
  end)

  it("edges layout: a grid smaller than the round (the stride loop), chunks of 1 and 5, a "
    .. "scan of more than one tile pass: the same levels and distances", function()
    -- scale 15: 32768 items of capacity, so the device-counted scan takes its three
    -- passes (more than 16384 elements); 256 invocations stride over every round. The
    -- fake pass (trim) runs the scale-15 graph's BFS once, host loop only.
    for _, c in ipairs({ { 15, 2, 7, 256, 16 }, { 8, 4, 9, 256, 1 }, { 8, 4, 9, 512, 5 } }) do
      local key = ("%d/%d/%d"):format(c[1], c[2], c[3])
      local big = trim and c[1] == 15
      for _, name in ipairs(big and { "bfs_wl" } or { "bfs_wl", "sssp" }) do
        local inst = W[name].setup(be, { scale = c[1], edge_factor = c[2], seed = c[3],
          layout = "edges", edge_threads = c[4], edge_chunk = c[5] })
        assert.are.equal(c[4], inst.steps[#inst.steps][3].n)
        if c[1] == 15 then assert.is_true(#inst.steps >= (name == "sssp" and 6 or 5)) end
        local rounds, bytes
        if big then
          rounds, bytes = run(be, inst, "host_loop")
        else
          rounds, bytes = all_modes(be, inst, ("%s edges %s chunk %d"):format(name, key, c[5]))
        end
        assert.matches(name == "sssp" and "equal to Dijkstra" or "equal to plain Lua BFS",
          select(2, inst.check(rounds)), 1, true)
        record(be, name .. "_edges_small_grid", key, rounds, bytes)
        -- a CUDA device: the cooperative kernel (rounds advanced and decided on the
        -- device) and the host split give the same bytes
        if be.name ~= "reference" and c[1] < 15 then
          for _, gs in ipairs({ "cooperative", "split" }) do
            inst.reset()
            local r = common.megakernel(be, inst, gs)
            assert.are.equal(rounds, r, name .. " " .. gs)
            assert.is_true(bytes == common.bytes(inst.output), name .. " " .. gs .. " bytes")
          end
        end
        -- the subgroup layout's bytes on the same graph
        if not big then
          local sg = W[name].setup(be, { scale = c[1], edge_factor = c[2], seed = c[3],
            layout = "subgroup" })
          local r2, b2 = run(be, sg, "host_loop")
          assert.are.equal(rounds, r2)
          assert.is_true(bytes == b2, name .. " " .. key .. ": edges vs subgroup bytes")
        end
      end
    end
  end)

  it("CC: labels (smallest vertex per component) equal union-find in every mode", function()
    for _, sh in ipairs(SHAPES) do
      local key = table.concat(sh, "/")
      local inst = W.cc.setup(be, size(sh))
      local rounds, bytes = all_modes(be, inst, "cc " .. key)
      assert.are.equal(1, rounds)
      assert.matches("equal to union-find", select(2, inst.check(rounds)), 1, true)
      record(be, "cc", key, rounds, bytes)
    end
  end)

  it("PageRank: within the tolerance of the Lua model, the same bits in every mode", function()
    for _, sh in ipairs(SHAPES) do
      local key = table.concat(sh, "/")
      local inst = W.pagerank.setup(be, size(sh, { tol = 1e-6 }))
      local rounds, bytes = all_modes(be, inst, "pagerank " .. key)
      assert.is_true(rounds > 2)
      record(be, "pagerank", key, rounds, bytes)
      -- the ranks sum to about 1 minus the isolated vertices' lost mass
      local sum = 0
      for _, r in ipairs(inst.output:download():totable()) do sum = sum + r end
      assert.is_true(sum > 0.5 and sum <= 1.0001, "sum " .. sum)
    end
  end)

  it("the checks refuse a corrupted result or wrong rounds", function()
    for name, M in pairs(W) do
      local inst = M.setup(be, size(SHAPES[2]))
      inst.reset()
      local rounds = common.host_loop(be, inst)
      assert.is_true((inst.check(rounds)), name)
      if name ~= "sssp" then assert.is_false((inst.check(rounds + 5)), name .. " rounds") end
      local arr = inst.output:download()
      -- a reached vertex (or any, for cc and pagerank) changed
      local i = 2
      while arr[i] == common.INF do i = i + 1 end
      arr[i] = inst.output.type == "f32" and arr[i] + 0.01 or arr[i] + 1
      inst.output:upload(arr)
      local ok, msg = inst.check(rounds)
      assert.is_false(ok, name)
      assert.is_string(msg)
    end
  end)
end

describe("worklist workloads on the reference", function()
  backend_suite(function() return vyre.backend("reference") end)

  it("the device checks alone (graphs too large for Lua) pass a result and refuse a bad one",
    function()
      local be = vyre.backend("reference")
      for _, name in ipairs({ "bfs_wl", "sssp", "cc" }) do
        local M = W[name]
        local limit = M.LUA_LIMIT
        M.LUA_LIMIT = 0
        local ok, err = pcall(function()
          local inst = M.setup(be, size(SHAPES[3]))
          inst.reset()
          local rounds = common.host_loop(be, inst)
          local good, msg = inst.check(rounds)
          assert.is_true(good, name .. ": " .. tostring(msg))
          assert.matches("device", msg, 1, true)
          assert.is_nil(msg:find("plain Lua", 1, true))
          local arr = inst.output:download()
          local i = #arr
          while arr[i] == common.INF or arr[i] == 0 do i = i - 1 end
          arr[i] = arr[i] + 1 -- a reached vertex one further away (cc: another label)
          inst.output:upload(arr)
          assert.is_false((inst.check(rounds)), name)
        end)
        M.LUA_LIMIT = limit
        assert(ok, err)
      end
    end)
end)

describe("vyre.policy.expansion", function()
  local policy = require("vyre.policy")

  after_each(function() policy.expansion = policy.default_expansion end)

  it("takes the subgroup layout for skewed R-MAT degrees, the item layout for flat ones",
    function()
      local be = vyre.backend("reference")
      local g = graph.build(be, { scale = 9, edge_factor = 8, seed = 1 })
      local st = graph.degree_stats(g.rowptr:download():totable())
      assert.is_true(st.max_degree >= 128 and st.heavy_edges > st.edges // 4)
      local c = policy.choose_expansion(st)
      assert.are.equal("subgroup", c.layout)
      assert.matches("skewed degrees", c.reason, 1, true)
      -- a ring: every degree 2
      local rowptr = {}
      for v = 0, 100 do rowptr[v + 1] = 2 * v end
      c = policy.choose_expansion(graph.degree_stats(rowptr))
      assert.are.equal("item", c.layout)
      assert.matches("max 2", c.reason, 1, true)
      -- one hub among many leaves: heavy, but a small share of the entries
      assert.are.equal("item", policy.choose_expansion({ items = 1000, edges = 10000,
        max_degree = 200, heavy_edges = 200 }).layout)
    end)

  it("takes the edges layout when a hub is >= 256 x the mean degree (R-MAT scale 20)",
    function()
      -- R-MAT scale 20, edge factor 16: mean 32, max 137951 (measured on the H100 run)
      local st = { items = 1 << 20, edges = 32 << 20, max_degree = 137951,
        heavy_edges = 28 << 20 }
      local c = policy.choose_expansion(st)
      assert.are.equal("edges", c.layout)
      assert.matches("max >= 256 x mean", c.reason, 1, true)
      -- the boundary: 256 x mean is edges, one less is subgroup
      st.max_degree = 256 * 32
      assert.are.equal("edges", policy.choose_expansion(st).layout)
      st.max_degree = 256 * 32 - 1
      assert.are.equal("subgroup", policy.choose_expansion(st).layout)
      -- a smaller workgroup lowers the bar
      st.workgroup = 128
      assert.are.equal("edges", policy.choose_expansion(st).layout)
      -- a hub among flat rows (few heavy entries) is not skewed: item
      assert.are.equal("item", policy.choose_expansion({ items = 100000, edges = 400000,
        max_degree = 50000, heavy_edges = 50000 }).layout)
      -- the R-MAT graph of scale 14 built here: edges (scale 9 is subgroup, above)
      local be = vyre.backend("reference")
      local g = graph.build(be, { scale = 14, edge_factor = 16, seed = 1 })
      local gs = graph.degree_stats(g.rowptr:download():totable())
      assert.is_true(gs.max_degree >= 256 * gs.edges / gs.items)
      assert.are.equal("edges", policy.choose_expansion(gs).layout)
    end)

  it("refuses bad statistics with a Fix, and checks a user policy's answer", function()
    local e = H.error_of(policy.choose_expansion, { items = 1, edges = 2, max_degree = 1 })
    assert.matches("stats.heavy_edges must be an integer", e, 1, true)
    assert.matches("Fix:", e, 1, true)
    assert.matches("exceeds stats.edges", H.error_of(policy.choose_expansion,
      { items = 1, edges = 2, max_degree = 9, heavy_edges = 3 }), 1, true)
    assert.matches("stats must be a table", H.error_of(policy.choose_expansion, 5), 1, true)
    local e3 = H.error_of(policy.choose_expansion, { items = 1, edges = 2, max_degree = 2,
      heavy_edges = 0, workgroup = 0 })
    assert.matches("stats.workgroup must be an integer >= 1", e3, 1, true)
    assert.matches("Fix:", e3, 1, true)
    policy.expansion = function() return { layout = "warp" } end
    assert.matches("layout warp", H.error_of(policy.choose_expansion, {}), 1, true)
    policy.expansion = function() error("boom") end
    local e2 = H.error_of(policy.choose_expansion, {})
    assert.matches("boom", e2, 1, true)
    assert.matches("Fix:", e2, 1, true)
    policy.expansion = function(st) return { layout = st.items > 5 and "subgroup" or "item" } end
    local c = policy.choose_expansion({ items = 9 })
    assert.are.equal("subgroup", c.layout)
    assert.matches("no reason given", c.reason, 1, true)
  end)

  it("a workload takes the policy's choice unless opts.layout forces one", function()
    local be = vyre.backend("reference")
    policy.expansion = function() return { layout = "item", reason = "test policy" } end
    local inst = W.bfs_wl.setup(be, size(SHAPES[2]))
    assert.are.same({ layout = "item", reason = "test policy" }, inst.layout)
    inst = W.bfs_wl.setup(be, size(SHAPES[2], { layout = "subgroup" }))
    assert.are.equal("subgroup", inst.layout.layout)
    policy.expansion = function() return { layout = "edges", reason = "test policy" } end
    inst = W.sssp.setup(be, size(SHAPES[2]))
    assert.are.equal("edges", inst.layout.layout)
    assert.are.equal(inst.nodes, inst.steps[#inst.steps][2].escan.count)
    assert.matches("opts.layout 'warp' is not", H.error_of(W.bfs_wl.setup, be,
      size(SHAPES[2], { layout = "warp" })), 1, true)
  end)
end)

describe("the examples run and match plain Lua", function()
  for _, ex in ipairs({ "bfs_rmat", "sssp", "cc", "pagerank" }) do
    it(ex, function()
      local p = assert(io.popen("lua5.4 examples/" .. ex .. ".lua 2>&1"))
      local out = p:read("a")
      local ok = p:close()
      assert.is_true(ok, out)
      assert.matches("— matches", out, 1, true)
    end)
  end
end)

describe("worklist workloads on the fake CUDA driver #fakecuda", function()
  local F = require("tests.fakecuda.harness")
  local available, why = F.available()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end
  -- the reference's results first, then the fake's are compared with them
  backend_suite(function() return vyre.backend("reference") end, true)
  backend_suite(function() return F.device() end, true)

  it("leaves nothing alive and misuses no driver handle", function()
    local dev = F.device()
    common.release(dev)
    graph.release(dev)
    vyre.lib.release(dev)
    collectgarbage()
    collectgarbage()
    assert.are.same({}, H.leftovers(F.device()))
    assert.are.equal(0, (F.misuse()))
  end)
end)

describe("worklist workloads on a GPU #gpu", function()
  local ok, cuda = pcall(require, "vyre.cuda")
  if not ok or not cuda.available() then
    it("needs CUDA", function() pending("CUDA is not usable here") end)
    return
  end
  backend_suite(function() return vyre.backend("reference") end)
  backend_suite(function() return assert(cuda.device(0)) end)

  it("scale 14: the layouts and modes agree, and every check passes", function()
    local be = assert(cuda.device(0))
    for _, name in ipairs({ "bfs_wl", "sssp" }) do
      local bytes
      for _, layout in ipairs(LAYOUTS) do
        local inst = W[name].setup(be, { scale = 14, edge_factor = 16, seed = 2, layout = layout })
        local _, b = all_modes(be, inst, name .. " " .. layout)
        if bytes then assert.is_true(bytes == b, name .. " layouts") end
        bytes = b
      end
    end
    all_modes(be, W.cc.setup(be, { scale = 14, edge_factor = 16, seed = 2 }), "cc")
  end)

  it("scale 18: the edges layout on the resident grid equals the subgroup layout", function()
    local be = assert(cuda.device(0))
    for _, name in ipairs({ "bfs_wl", "sssp" }) do
      local bytes, rounds
      for _, layout in ipairs({ "subgroup", "edges" }) do
        local inst = W[name].setup(be, { scale = 18, edge_factor = 16, seed = 4, layout = layout })
        if layout == "edges" then
          -- the resident grid, not one invocation per chunk of the graph
          assert.is_true(expand.edge_threads(be, inst.graph.entries, expand.EDGE_CHUNK)
            < inst.graph.entries // expand.EDGE_CHUNK)
        end
        local r, b = all_modes(be, inst, name .. " " .. layout .. " scale 18")
        if bytes then
          assert.are.equal(rounds, r, name .. " rounds")
          assert.is_true(bytes == b, name .. " layouts")
        end
        bytes, rounds = b, r
      end
    end
    all_modes(be, W.pagerank.setup(be, { scale = 14, edge_factor = 16, seed = 2, tol = 1e-5 }),
      "pagerank")
  end)
end)
