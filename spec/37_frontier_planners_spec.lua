-- 37: the frontier planners — vyre.planners.convergence (the on-device convergence
-- plan), vyre.planners.topology (the six topologies, rule order, thresholds at their
-- edges, hysteresis margins, the memory plan) and vyre.planners.waves (Kahn layering,
-- the frontier variant, InvalidWave / SelfDependency / Cycle).
local vyre = require("vyre")
local H = require("spec.helpers")
local conv = vyre.planners.convergence
local topo = vyre.planners.topology
local waves = vyre.planners.waves

local function errmsg(fn, ...)
  return H.error_of(fn, ...)
end

describe("convergence.plan", function()
  it("one host sync and one 4-byte readback, whatever the round cap", function()
    local p = conv.plan({ max_device_iterations = 5000, changed_flag_bytes = 4, host_polls = 0 })
    assert.are.same({ mode = "device", max_device_iterations = 5000, host_sync_points = 1,
      readback = "final_flag", readback_bytes = 4, changed_flag_bytes = 4, host_polls = 0 }, p)
    assert.are.same(p, conv.plan({ max_device_iterations = 5000 }))
  end)

  it("reports what a host loop of the expected rounds would have cost more", function()
    local p = conv.plan({ max_device_iterations = 5000, rounds_expected = 2047 })
    assert.are.same({ 2047, 2046, 2046 * 4 }, { p.rounds_expected, p.avoided_host_syncs,
      p.avoided_readback_bytes })
  end)

  it("errors", function()
    local cases = {
      { {}, "input.max_device_iterations must be an integer >= 1 (got nil)" },
      { { max_device_iterations = 0 }, "input.max_device_iterations must be an integer >= 1" },
      { { max_device_iterations = 10, changed_flag_bytes = 8 },
        "changed_flag_bytes must be 4 (got 8): the flag is one u32 word" },
      { { max_device_iterations = 10, host_polls = 3 }, "host_polls must be 0 (got 3)" },
      { { max_device_iterations = 10, rounds_expected = 11 },
        "rounds_expected (11) exceeds max_device_iterations (10)" },
    }
    for _, c in ipairs(cases) do
      local e = errmsg(conv.plan, c[1])
      assert.truthy(e:find("vyre.planners.convergence.plan: " .. c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
    assert.truthy(errmsg(conv.plan, nil):find("input must be a table (got nil)", 1, true))
  end)

  it("of(): be:megakernel's converge option", function()
    local be = vyre.backend("reference")
    local flag = be:buffer("u32", 1)
    local p = conv.of({ flag = flag, max = 300 })
    assert.are.same({ 300, 1, 4 }, { p.max_device_iterations, p.host_sync_points,
      p.readback_bytes })
    local e = errmsg(conv.of, { flag = be:buffer("f32", 1), max = 3 })
    assert.truthy(e:find("vyre.planners.convergence.of: converge.flag must be a u32 or i32 "
      .. "Buffer (got f32)", 1, true))
    e = errmsg(conv.of, { flag = 7, max = 3 })
    assert.truthy(e:find("converge.flag must be a u32 or i32 Buffer (got number)", 1, true))
    e = errmsg(conv.of, { flag = be:buffer("u32", 0), max = 3 })
    assert.truthy(e:find("converge.flag has no element", 1, true))
    e = errmsg(conv.of, { flag = flag })
    assert.truthy(e:find("converge.max must be an integer >= 1 (got nil)", 1, true))
  end)
end)

-- Inputs that select no special rule: middling density, no pressure.
local function input(t)
  local i = { memory_bps = 1000, degree = 4, density = 0.4, launch_bps = 0, fusion = 0,
    readback_bytes = 0 }
  for k, v in pairs(t or {}) do i[k] = v end
  return i
end

describe("topology.choose", function()
  it("each rule at its threshold", function()
    local cases = {
      { { memory_bps = 9000 }, "sparse", "memory_pressure" },
      { { fusion = 0.70, launch_bps = 1500, readback_bytes = 4096, memory_bps = 8500 },
        "fused-wave", "fused_wave" },
      { { density = 1 / 32, degree = 8 }, "warp-sparse", "warp_sparse" },
      { { density = 0.125 }, "sparse", "sparse_frontier" },
      { { density = 0.85, degree = 2 }, "block-dense", "block_dense" },
      { { density = 0.70, degree = 2 }, "dense", "dense" },
      { {}, "hybrid", "hybrid" },
    }
    for _, c in ipairs(cases) do
      local r = topo.choose(input(c[1]))
      assert.are.equal(c[2], r.topology, c[3])
      assert.are.equal(c[3], r.rule)
      assert.truthy(r.reason:find("rule " .. c[3], 1, true))
    end
  end)

  it("just past each threshold the rule no longer holds", function()
    assert.are.equal("hybrid", topo.choose(input({ memory_bps = 8999 })).topology)
    assert.are.equal("hybrid", topo.choose(input({ fusion = 0.70, launch_bps = 1500,
      readback_bytes = 4095 })).topology)
    assert.are.equal("hybrid", topo.choose(input({ fusion = 0.70, launch_bps = 1500,
      readback_bytes = 4096, memory_bps = 8501 })).topology)
    assert.are.equal("sparse", topo.choose(input({ density = 1 / 32, degree = 8.5 })).topology)
    assert.are.equal("hybrid", topo.choose(input({ density = 0.126 })).topology)
    assert.are.equal("dense", topo.choose(input({ density = 0.849, degree = 2 })).topology)
    assert.are.equal("hybrid", topo.choose(input({ density = 0.95, degree = 1.9 })).topology)
    assert.are.equal("hybrid", topo.choose(input({ density = 0.699 })).topology)
  end)

  it("rule order: memory pressure before fusion, fusion before density", function()
    local fused = { fusion = 0.9, launch_bps = 5000, readback_bytes = 1 << 20 }
    fused.memory_bps = 9500
    assert.are.equal("sparse", topo.choose(input(fused)).topology)
    fused.memory_bps, fused.density, fused.degree = 100, 0.01, 1
    assert.are.equal("fused-wave", topo.choose(input(fused)).topology)
  end)

  it("measures derived from raw counts", function()
    local r = topo.choose({ required_bytes = 95, budget_bytes = 100, edges = 160, nodes = 10,
      frontier_nodes = 1, launch_overhead_ns = 3000, dispatch_ns = 10000, fusion = 0.5,
      readback_bytes = 8 })
    assert.are.same({ memory_bps = 9500, degree = 16, density = 0.1, launch_bps = 3000,
      fusion = 0.5, readback_bytes = 8 }, r.measures)
    local mp = topo.memory_plan({ nodes = 10, edges = 20, budget_bytes = 1000 })
    r = topo.choose({ memory = mp, degree = 2, density = 0.5 })
    assert.are.equal(1200, r.measures.memory_bps)
  end)

  it("errors name the measure", function()
    local cases = {
      { { density = 0.5 }, "input.degree is missing" },
      { { degree = 3 }, "input.density is missing" },
      { input({ density = 1.5 }), "input.density must be a number in [0, 1] (got 1.5)" },
      { input({ fusion = -0.1 }), "input.fusion must be a number in [0, 1] (got -0.1)" },
      { input({ degree = 0 / 0 }), "input.degree must be a number >= 0" },
      { { degree = 1, frontier_nodes = 11, nodes = 10 },
        "input.frontier_nodes (11) exceeds input.nodes (10)" },
      { { degree = 1, density = 0.1, dispatch_ns = 0 }, "input.dispatch_ns is 0" },
      { { degree = 1, density = 0.1, required_bytes = 5, budget_bytes = 0 },
        "input.budget_bytes must be an integer >= 1 (got 0)" },
    }
    for _, c in ipairs(cases) do
      local e = errmsg(topo.choose, c[1])
      assert.truthy(e:find("vyre.planners.topology.choose: " .. c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
  end)
end)

describe("topology.choose_hysteresis", function()
  local function hy(t, prev)
    local r = topo.choose_hysteresis(input(t), prev)
    return r.topology, r.kept
  end

  it("no previous topology: the plain choice", function()
    assert.are.same({ "hybrid", false }, { hy({}, nil) })
    assert.are.same({ "hybrid", true }, { hy({}, "hybrid") })
  end)

  it("density margin 0.025", function()
    assert.are.same({ "sparse", true }, { hy({ density = 0.149 }, "sparse") })
    assert.are.same({ "hybrid", false }, { hy({ density = 0.151 }, "sparse") })
    assert.are.same({ "dense", true }, { hy({ density = 0.676 }, "dense") })
    assert.are.same({ "hybrid", false }, { hy({ density = 0.674 }, "dense") })
    -- entering block-dense from dense needs 0.85 + 0.025
    assert.are.same({ "dense", true }, { hy({ density = 0.87 }, "dense") })
    assert.are.same({ "block-dense", false }, { hy({ density = 0.876 }, "dense") })
  end)

  it("memory margin 250 bps", function()
    assert.are.same({ "sparse", true }, { hy({ memory_bps = 8751 }, "sparse") })
    assert.are.same({ "hybrid", false }, { hy({ memory_bps = 8749 }, "sparse") })
    local fw = { fusion = 0.8, launch_bps = 2000, readback_bytes = 8192 }
    fw.memory_bps = 8700 -- over 8500, within the margin
    assert.are.same({ "fused-wave", true }, { hy(fw, "fused-wave") })
    fw.memory_bps = 9251 -- past 9000 + 250: memory pressure wins
    assert.are.same({ "sparse", false }, { hy(fw, "fused-wave") })
  end)

  it("fusion margin 0.10", function()
    local fw = { launch_bps = 2000, readback_bytes = 8192, memory_bps = 100 }
    fw.fusion = 0.61
    assert.are.same({ "fused-wave", true }, { hy(fw, "fused-wave") })
    fw.fusion = 0.59
    assert.are.same({ "hybrid", false }, { hy(fw, "fused-wave") })
    fw.fusion = 0.79 -- entering fused-wave from hybrid needs 0.70 + 0.10
    assert.are.same({ "hybrid", true }, { hy(fw, "hybrid") })
    fw.fusion = 0.81
    assert.are.same({ "fused-wave", false }, { hy(fw, "hybrid") })
  end)

  it("an unknown previous topology is an error", function()
    local e = errmsg(topo.choose_hysteresis, input(), "sparse-ish")
    assert.truthy(e:find("vyre.planners.topology.choose_hysteresis: previous must be a topology "
      .. "name (got sparse-ish). Fix: pass one of warp-sparse, sparse", 1, true))
  end)
end)

describe("topology.memory_plan", function()
  it("graph, required, fits and pressure", function()
    local m = topo.memory_plan({ nodes = 1000, edges = 16000, bytes_per_node = 8,
      bytes_per_edge = 4, frontier_bytes = 4000, scratch_bytes = 1000, output_bytes = 4000,
      budget_bytes = 100000 })
    assert.are.same({ graph_bytes = 72000, required_bytes = 81000, budget_bytes = 100000,
      memory_bps = 8100, fits = true }, m)
    m = topo.memory_plan({ nodes = 1000, edges = 0, budget_bytes = 3999 })
    assert.is_false(m.fits)
  end)

  it("errors", function()
    local cases = {
      { { nodes = 1, edges = 1, budget_bytes = 0 }, "budget_bytes is 0" },
      { { nodes = -1, edges = 1, budget_bytes = 10 }, "input.nodes must be an integer >= 0" },
      { { nodes = 1 << 40, edges = 1, bytes_per_node = 1 << 20, budget_bytes = 10 },
        "nodes x bytes_per_node overflows" },
    }
    for _, c in ipairs(cases) do
      local e = errmsg(topo.memory_plan, c[1])
      assert.truthy(e:find("vyre.planners.topology.memory_plan: " .. c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
  end)
end)

describe("waves.plan", function()
  it("Kahn layers: a diamond is three groups, two barriers", function()
    local p = waves.plan({ waves = 4, edges = { { 1, 2 }, { 1, 3 }, { 2, 4 }, { 3, 4 } } })
    assert.are.same({ { 1 }, { 2, 3 }, { 4 } }, p.groups)
    assert.are.equal(2, p.barriers)
  end)

  it("independent waves share one group; no barrier", function()
    local p = waves.plan({ waves = { "a", "b", "c" } })
    assert.are.same({ { "a", "b", "c" } }, p.groups)
    assert.are.equal(0, p.barriers)
    assert.are.same({ groups = {}, barriers = 0 }, waves.plan({ waves = 0 }))
  end)

  it("a wave waits for its longest chain; edges as {before =, after =}; duplicates once",
    function()
      local p = waves.plan({ waves = { 10, 20, 30, 40 }, edges = { { before = 10, after = 20 },
        { before = 20, after = 30 }, { before = 10, after = 30 }, { 10, 20 } } })
      assert.are.same({ { 10, 40 }, { 20 }, { 30 } }, p.groups)
    end)

  it("the frontier variant: bytes per group and the peak", function()
    local p = waves.plan({ waves = {
      { id = 1, frontier_bytes = 100, scratch_bytes = 10, output_bytes = 1 },
      { id = 2, frontier_bytes = 200, scratch_bytes = 20, output_bytes = 2 },
      { id = 3, frontier_bytes = 50, scratch_bytes = 40, output_bytes = 4 } },
      edges = { { 1, 3 } } })
    assert.are.same({ { 1, 2 }, { 3 } }, p.groups)
    assert.are.same({ frontier_bytes = 300, scratch_bytes = 30, output_bytes = 3,
      total_bytes = 333 }, p.group_bytes[1])
    assert.are.same({ 300, 40, 4, 333 }, { p.peak_frontier_bytes, p.peak_scratch_bytes,
      p.peak_output_bytes, p.peak_total_bytes })
  end)

  it("InvalidWave, SelfDependency, Cycle", function()
    local cases = {
      { { waves = 2, edges = { { 1, 3 } } },
        "edge 1 names wave 3, which is not in input.waves [InvalidWave]" },
      { { waves = { 1, 2, 1 } }, "waves[3] has a repeated id 1 [InvalidWave]" },
      { { waves = { 1, true } }, "waves[2] has an invalid id true [InvalidWave]" },
      { { waves = 2, edges = { { 2, 2 } } }, "edge 1 makes wave 2 depend on itself "
        .. "[SelfDependency]" },
      { { waves = { "a", "b", "c", "d" }, edges = { { "a", "b" }, { "b", "c" }, { "c", "b" },
        { "c", "d" } } }, "the edges form a cycle; unscheduled waves: 'b', 'c', 'd' [Cycle]" },
      { { waves = { { id = 1, frontier_bytes = -1 } } },
        "waves[1].frontier_bytes must be an integer >= 0" },
    }
    for _, c in ipairs(cases) do
      local e = errmsg(waves.plan, c[1])
      assert.truthy(e:find("vyre.planners.waves.plan: " .. c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
  end)

  it("on random DAGs every edge goes from an earlier group to a later one", function()
    local rng = 12345
    local function rand(n)
      rng = (rng * 1103515245 + 12345) % 2147483648
      return rng % n + 1
    end
    for _ = 1, 50 do
      local n = rand(12)
      local edges = {}
      for _ = 1, rand(20) do
        local a, b = rand(n), rand(n)
        if a < b then edges[#edges + 1] = { a, b } end
      end
      local p = waves.plan({ waves = n, edges = edges })
      local group = {}
      for gi, g in ipairs(p.groups) do for _, w in ipairs(g) do group[w] = gi end end
      for w = 1, n do assert.is_number(group[w]) end
      for _, e in ipairs(edges) do assert.is_true(group[e[1]] < group[e[2]]) end
      -- and no wave is later than it must be: each wave past the first group has a
      -- predecessor in the group just before it
      local tight = {}
      for _, e in ipairs(edges) do
        if group[e[1]] == group[e[2]] - 1 then tight[e[2]] = true end
      end
      for w = 1, n do
        if group[w] > 1 then assert.is_true(tight[w], "wave " .. w) end
      end
    end
  end)
end)
