-- 38: vyre.planners.speedup_gate (samples -> pass/fail with every reason, the CSV with
-- the original's header) and vyre.plan_view (plan:dot() and tostring(plan) on hand-made
-- plan tables; the dot text is checked by Graphviz `dot -Tsvg` where it is installed).
local vyre = require("vyre")
local H = require("spec.helpers")
local gate = vyre.planners.speedup_gate
local view = vyre.plan_view

local function sample(t)
  local s = { backend_id = "cuda", device_ordinal = 0, device_memory_bytes = 80 * 1024 ^ 3,
    compute_capability_major = 9, compute_capability_minor = 0, graph_nodes = 1 << 20,
    graph_edges = 4 << 20, repetitions = 2047, host_orchestrated_ns = 40000000,
    resident_megakernel_ns = 4000000, setup_ns = 1000000, timed_graph_uploads = 0,
    timed_host_allocations = 0, timed_host_syncs = 0, resident_borrowed_fallback_dispatches = 0 }
  for k, v in pairs(t or {}) do s[k] = v end
  return s
end

describe("speedup_gate", function()
  it("the CSV header is the original's, column for column", function()
    assert.are.equal("backend_id,device_ordinal,device_memory_bytes,compute_capability_major,"
      .. "compute_capability_minor,graph_nodes,graph_edges,repetitions,host_orchestrated_ns,"
      .. "resident_megakernel_ns,setup_ns,timed_graph_uploads,timed_host_allocations,"
      .. "timed_host_syncs,resident_borrowed_fallback_dispatches", gate.HEADER)
  end)

  it("one row per sample, integers as integers", function()
    local csv = gate.csv({ sample(), sample({ device_ordinal = 1, setup_ns = 7.0 }) })
    local lines = {}
    for l in csv:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal(3, #lines)
    assert.are.equal(gate.HEADER, lines[1])
    assert.are.equal("cuda,0,85899345920,9,0,1048576,4194304,2047,40000000,4000000,1000000,0,0,0,0",
      lines[2])
    assert.are.equal("cuda,1,85899345920,9,0,1048576,4194304,2047,40000000,4000000,7,0,0,0,0",
      lines[3])
    assert.are.equal("\n", csv:sub(-1))
  end)

  it("passes at 10x against a 5x factor (the default)", function()
    local v = gate.evaluate({ sample(), sample({ resident_megakernel_ns = 5000000 }) })
    assert.is_true(v.pass)
    assert.are.same({}, v.failures)
    assert.are.same({ 10, 8 }, v.ratios)
    assert.are.equal(8, v.min_ratio)
    assert.are.equal(80000000 / 9000000, v.ratio)
    assert.are.equal(5, v.factor)
    assert.are.equal(gate.csv({ sample(), sample({ resident_megakernel_ns = 5000000 }) }), v.csv)
  end)

  it("the original's 100x factor fails the same samples, saying why", function()
    local v = gate.evaluate({ sample(), sample() }, { factor = 100 })
    assert.is_false(v.pass)
    assert.are.same({ "sample 1: speedup 10.00x < 100x", "sample 2: speedup 10.00x < 100x" },
      v.failures)
  end)

  it("every disqualification, one reason each", function()
    local cases = {
      { { sample() }, "1 sample, at least 2 needed" },
      { { sample(), sample({ backend_id = "reference" }) },
        "sample 2: backend reference, not cuda" },
      { { sample(), sample({ device_memory_bytes = 8 * 1024 ^ 3 }) },
        "sample 2: device memory 8589934592 < 17179869184 bytes" },
      { { sample(), sample({ compute_capability_major = 7, compute_capability_minor = 5 }) },
        "sample 2: compute capability 7.5 < 8.0" },
      { { sample({ graph_nodes = 9999 }), sample() }, "sample 1: 9999 graph nodes < 10000" },
      { { sample({ graph_edges = 79999 }), sample() }, "sample 1: 79999 graph edges < 80000" },
      { { sample({ repetitions = 63 }), sample() }, "sample 1: 63 repetitions < 64" },
      { { sample({ timed_graph_uploads = 1 }), sample() },
        "sample 1: timed_graph_uploads = 1 inside the timed region" },
      { { sample({ timed_host_allocations = 2 }), sample() },
        "sample 1: timed_host_allocations = 2 inside the timed region" },
      { { sample({ timed_host_syncs = 3 }), sample() },
        "sample 1: timed_host_syncs = 3 inside the timed region" },
      { { sample({ resident_borrowed_fallback_dispatches = 1 }), sample() },
        "sample 1: resident_borrowed_fallback_dispatches = 1 inside the timed region" },
      { { sample({ resident_megakernel_ns = 40000000 }), sample() },
        "sample 1: speedup 1.00x < 5x" },
    }
    for _, c in ipairs(cases) do
      local v = gate.evaluate(c[1])
      assert.is_false(v.pass)
      assert.are.same({ c[2] }, v.failures)
    end
  end)

  it("options relax the floors (a small CI workload on the reference backend)", function()
    local s = sample({ backend_id = "reference", device_memory_bytes = 0,
      compute_capability_major = 0, graph_nodes = 64, graph_edges = 200, repetitions = 5 })
    local v = gate.evaluate({ s, s }, { backend = "reference", min_memory_bytes = 0,
      min_cc = "0.0", min_nodes = 1, min_edges = 1, min_repetitions = 1, factor = 2 })
    assert.is_true(v.pass)
  end)

  it("errors", function()
    local cases = {
      { { sample() }, { speed = 1 }, "evaluate: unknown option 'speed'" },
      { { sample() }, { factor = 0 }, "evaluate: opts.factor must be > 0" },
      { { sample() }, { min_cc = "8" }, "evaluate: opts.min_cc must be like \"8.0\" (got 8)" },
      { { sample({ host_orchestrated_ns = 1.5 }) }, nil,
        "evaluate: samples[1].host_orchestrated_ns must be an integer >= 1 (got 1.5)" },
      { { sample({ resident_megakernel_ns = 0 }) }, nil,
        "evaluate: samples[1].resident_megakernel_ns must be an integer >= 1 (got 0)" },
      { { sample({ backend_id = "cu,da" }) }, nil,
        "evaluate: samples[1].backend_id must be a name without commas" },
      { { 5 }, nil, "evaluate: samples[1] must be a table (got number)" },
    }
    for _, c in ipairs(cases) do
      local e = H.error_of(gate.evaluate, c[1], c[2])
      assert.truthy(e:find("vyre.planners.speedup_gate." .. c[3], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
  end)
end)

-- A plan as be:plan returns it: BFS's expand (reads dist, frontier; writes next) and
-- count (reads next) in two layers, then advance.
local function bfs_plan()
  return {
    mode = "cooperative", reason = "cheapest for 3 steps",
    layers = { { steps = { 1, 2 } }, { steps = { 3 } } },
    barriers = { { after_layer = 1, kind = "RAW", buffer = "next", from = 1, to = 3 },
      { after_layer = 1, kind = "WAR", buffer = "level", from = 2, to = 3 } },
    grid = { blocks = 264, blocks_per_sm = 2, sms = 132, threads = 256 },
    occupancy = 0.5, bytes_per_round = 4 * 1024 * 1024 + 12,
    facts = { cooperative = true, fits = true, steps = 3, layers = 2 },
    steps = { { name = "expand" }, { name = "count" }, { name = "advance" } },
  }
end

local function has_dot()
  local f = io.popen("command -v dot 2>/dev/null")
  local path = f and f:read("l")
  if f then f:close() end
  return path ~= nil and path ~= ""
end

-- Renders text with `dot -Tsvg`; returns ok, svg-or-error.
local function render(text)
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "w"))
  f:write(text)
  f:close()
  local p = io.popen(("dot -Tsvg %s 2>&1"):format(tmp))
  local out = p:read("a")
  local ok = p:close()
  os.remove(tmp)
  return ok, out
end

describe("plan_view", function()
  it("attach returns the plan with :dot() and __tostring", function()
    local p = bfs_plan()
    assert.are.equal(p, view.attach(p))
    assert.are.equal("function", type(p.dot))
    assert.are.equal("vyre.Plan", getmetatable(p).__name)
  end)

  it("dot: a cluster per layer, a node per step, labelled barrier edges", function()
    local d = view.attach(bfs_plan()):dot()
    assert.truthy(d:find("^digraph plan {\n"))
    assert.truthy(d:find("subgraph cluster_layer1 {", 1, true))
    assert.truthy(d:find("subgraph cluster_layer2 {", 1, true))
    assert.truthy(d:find("s1 [label=\"1: expand\"];", 1, true))
    assert.truthy(d:find("s3 [label=\"3: advance\"];", 1, true))
    assert.truthy(d:find("s1 -> s3 [label=\"RAW next\\nbarrier after layer 1\"];", 1, true))
    assert.truthy(d:find("s2 -> s3 [label=\"WAR level\\nbarrier after layer 1\"];", 1, true))
    assert.truthy(d:find("label=\"mode: cooperative\\ncheapest for 3 steps\";", 1, true))
    local _, clusters = d:gsub("subgraph cluster", "")
    assert.are.equal(2, clusters)
  end)

  it("names are escaped for Graphviz", function()
    local p = bfs_plan()
    p.steps[1].name = "say \"hi\" \\ there"
    p.reason = "line one\nline two"
    local d = view.attach(p):dot()
    assert.truthy(d:find("s1 [label=\"1: say \\\"hi\\\" \\\\ there\"];", 1, true))
    assert.truthy(d:find("line one\\nline two", 1, true))
  end)

  it("steps without names and a single layer without barriers", function()
    local d = view.attach({ mode = "split", layers = { { steps = { 1 } } },
      barriers = {} }):dot()
    assert.truthy(d:find("s1 [label=\"step 1\"];", 1, true))
    assert.falsy(d:find("->", 1, true))
  end)

  it("tostring: mode, grid, bytes, layers with their barriers, facts", function()
    local s = tostring(view.attach(bfs_plan()))
    assert.are.equal(table.concat({
      "plan: cooperative — cheapest for 3 steps",
      "grid: 264 blocks (2 per SM x 132 SMs) of 256 threads, occupancy 50.0%",
      "bytes per round: 4.0 MiB",
      "layer 1: [1: expand] [2: count]",
      "  barrier: RAW (read after write) on next, step 1 -> step 3",
      "  barrier: WAR (write after read) on level, step 2 -> step 3",
      "layer 2: [3: advance]",
      "facts: cooperative=true fits=true layers=2 steps=3",
    }, "\n"), s)
  end)

  it("malformed plans are errors with a Fix", function()
    local cases = {
      { { layers = 3 }, "plan.layers must be a list of {steps = {...}} (got number)" },
      { { layers = { { steps = { 1 } }, { steps = { 1 } } } },
        "plan.layers[2] lists step 1, which is already in a layer" },
      { { layers = { { steps = { 0 } } } }, "plan.layers[1] lists step 0, which is not a step" },
      { { layers = { 5 } }, "plan.layers[1] must be {steps = {...}}" },
      { { layers = { { steps = { 1 } } }, barriers = { { from = 1, to = 2 } } },
        "plan.barriers[1] must name steps of the plan in from and to" },
    }
    for _, c in ipairs(cases) do
      local e = H.error_of(view.methods.dot, view.attach(c[1]))
      assert.truthy(e:find("vyre.Plan:dot: " .. c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
    assert.truthy(H.error_of(view.attach, "plan"):find(
      "vyre.plan_view.attach: plan must be a table (got string). Fix:", 1, true))
  end)

  it("Graphviz renders every plan's dot text (where dot is installed)", function()
    if not has_dot() then
      pending("graphviz `dot` is not on PATH: the rendering check did not run")
      return
    end
    local p = bfs_plan()
    p.steps[1].name = "say \"hi\" \\ there"
    for _, plan in ipairs({ p, { mode = "graph", layers = { { steps = { 1 } } } } }) do
      local ok, out = render(view.attach(plan):dot())
      assert.is_true(ok, out)
      assert.truthy(out:find("<svg", 1, true), out)
    end
    local ok = render("digraph { a -> }")
    assert.is_falsy(ok) -- the check can fail
  end)
end)
