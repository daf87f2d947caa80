-- 68: vyre.planners.session (resident graph session: peak bytes, avoided uploads,
-- allocations and fences, every error, measured sessions as speedup-gate samples) and
-- vyre.planners.passes (benchmark pass selection: mandatory first, the order, every
-- skip reason, both budgets, the projected speedup, every error).
local vyre = require("vyre")
local H = require("spec.helpers")
local session = vyre.planners.session
local passes = vyre.planners.passes
local gate = vyre.planners.speedup_gate

local function sess(over)
  local t = { graph_layout_hash = 0x5eed, graph_bytes = 1000, run_count = 10,
    per_run_frontier_bytes = 100, reusable_scratch_bytes = 50, per_run_output_bytes = 20,
    budget_bytes = 2000, readback = "final_only" }
  for k, v in pairs(over or {}) do t[k] = v end
  return t
end

describe("session.plan", function()
  it("peak = graph + frontier + scratch + output; runs - 1 uploads, 3 (runs - 1) allocations "
    .. "and runs - 1 fences avoided", function()
    local p = session.plan(sess())
    assert.are.same({ 1170, 1, 3, 1, 9, 9000, 27, 9 }, { p.peak_bytes, p.uploads,
      p.allocations, p.host_fences, p.avoided_uploads, p.avoided_upload_bytes,
      p.avoided_allocations, p.avoided_fences })
    assert.are.same({ 0x5eed, 10, 2000, "final_only" }, { p.graph_layout_hash, p.run_count,
      p.budget_bytes, p.readback })
  end)

  it("one run avoids nothing; the peak may equal the budget; readback defaults", function()
    local p = session.plan(sess({ run_count = 1, budget_bytes = 1170, readback = nil }))
    assert.are.same({ 0, 0, 0, 0, "final_only" }, { p.avoided_uploads, p.avoided_upload_bytes,
      p.avoided_allocations, p.avoided_fences, p.readback })
  end)

  it("errors", function()
    local cases = {
      { sess({ graph_layout_hash = 0 }), "input.graph_layout_hash must be a non-zero integer" },
      { sess({ graph_bytes = 0 }), "input.graph_bytes must be an integer >= 1 (got 0)" },
      { sess({ run_count = 0 }), "input.run_count must be an integer >= 1 (got 0)" },
      { sess({ budget_bytes = 0 }), "input.budget_bytes must be an integer >= 1 (got 0)" },
      { sess({ per_run_frontier_bytes = -1 }), "input.per_run_frontier_bytes must be an integer" },
      { sess({ readback = "every_run" }), "input.readback must be \"final_only\" (got every_run)" },
      { sess({ budget_bytes = 1169 }), "the session needs 1170 resident bytes (graph + frontier "
        .. "+ scratch + output), over the budget of 1169" },
      { sess({ graph_bytes = 2^53, budget_bytes = 2^53 }), "overflows" },
      { sess({ graph_bytes = 2^52, run_count = 2^12, per_run_frontier_bytes = 0,
        reusable_scratch_bytes = 0, per_run_output_bytes = 0, budget_bytes = 2^53 }),
        "avoided upload bytes overflows" },
      { 7, "input must be a table" },
    }
    for _, c in ipairs(cases) do
      local e = H.error_of(session.plan, c[1])
      assert.truthy(e:find("vyre.planners.session.plan: ", 1, true), e)
      assert.truthy(e:find(c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
  end)
end)

describe("session.sample / samples", function()
  local plan = session.plan(sess({ run_count = 64 }))
  local function measured(over)
    local m = { host_orchestrated_ns = 6000000, resident_ns = 1000000, setup_ns = 5000,
      graph_nodes = 10000, graph_edges = 80000, profile = vyre.cuda.profile("h100") }
    for k, v in pairs(over or {}) do m[k] = v end
    return m
  end

  it("makes a speedup-gate sample with every CSV column", function()
    local s = session.sample(plan, measured())
    local h = vyre.cuda.profile("h100")
    assert.are.same({ backend_id = "cuda", device_ordinal = 0,
      device_memory_bytes = h.memory_bytes, compute_capability_major = 9,
      compute_capability_minor = 0, graph_nodes = 10000, graph_edges = 80000,
      repetitions = 64, host_orchestrated_ns = 6000000, resident_megakernel_ns = 1000000,
      setup_ns = 5000, timed_graph_uploads = 0, timed_host_allocations = 0,
      timed_host_syncs = 0, resident_borrowed_fallback_dispatches = 0 }, s)
    for _, col in ipairs(gate.COLUMNS) do assert.is_not_nil(s[col], col) end
  end)

  it("measured sessions pass the gate; counters in the timed region fail it", function()
    local v = gate.evaluate(session.samples(plan, { measured(), measured() }))
    assert.is_true(v.pass, table.concat(v.failures, "; "))
    assert.are.equal(6, v.min_ratio)
    v = gate.evaluate(session.samples(plan, { measured(), measured({ uploads = 1,
      host_syncs = 2 }) }))
    assert.is_false(v.pass)
    assert.truthy(table.concat(v.failures, "\n"):find("timed_graph_uploads = 1", 1, true))
    assert.truthy(table.concat(v.failures, "\n"):find("timed_host_syncs = 2", 1, true))
  end)

  it("explicit device fields win over the profile's", function()
    local s = session.sample(plan, measured({ device_memory_bytes = 5,
      cc_major = 7, cc_minor = 5, backend_id = "reference", device_ordinal = 2 }))
    assert.are.same({ "reference", 2, 5, 7, 5 }, { s.backend_id, s.device_ordinal,
      s.device_memory_bytes, s.compute_capability_major, s.compute_capability_minor })
  end)

  it("errors", function()
    local e = H.error_of(session.sample, plan, measured({ resident_ns = 0 }))
    assert.truthy(e:find("vyre.planners.session.sample: the measurement does not make a sample: "
      .. "samples[1].resident_megakernel_ns must be an integer >= 1", 1, true), e)
    e = H.error_of(session.sample, plan, { host_orchestrated_ns = 1, resident_ns = 1 })
    assert.truthy(e:find("device_memory_bytes must be an integer", 1, true), e)
    e = H.error_of(session.sample, {}, measured())
    assert.truthy(e:find("plan.run_count must be an integer >= 1", 1, true), e)
    e = H.error_of(session.samples, plan, "x")
    assert.truthy(e:find("vyre.planners.session.samples: argument 2 (list) must be a table", 1,
      true), e)
  end)
end)

local function cand(id, bps, over)
  local c = { pass_id = id, expected_speedup_bps = bps, min_frontier_items = 0,
    min_reuse_count = 0, min_avoided_readback_bytes = 0, planning_cost_ns = 0,
    scratch_bytes = 0, mandatory_when_profitable = false }
  for k, v in pairs(over or {}) do c[k] = v end
  return c
end

local function sel(cands, over)
  local t = { candidates = cands, frontier_items = 1000, reuse_count = 10,
    avoided_readback_bytes = 4096, planning_budget_ns = 1000, scratch_budget_bytes = 1000 }
  for k, v in pairs(over or {}) do t[k] = v end
  return passes.select(t)
end

describe("passes.select", function()
  it("mandatory first, then by expected speedup, then by id; speedup = product", function()
    local r = sel({ cand("cuda.result_compaction", 11000), cand("cuda.launch_fusion", 15000),
      cand("cuda.resident_graph_reuse", 12000, { mandatory_when_profitable = true }),
      cand("cuda.graph_capture_replay", 15000) })
    assert.are.same({ "cuda.resident_graph_reuse", "cuda.graph_capture_replay",
      "cuda.launch_fusion", "cuda.result_compaction" }, r.order)
    assert.are.same(r.order, r.selected)
    assert.are.same({}, r.skipped)
    -- 1.2 x 1.5 x 1.5 x 1.1 = 2.97.
    assert.are.equal(29700, r.projected_speedup_bps)
    assert.are.equal(2.97, r.projected_speedup)
  end)

  it("every threshold skips with its reason, in order, and is inclusive", function()
    local r = sel({ cand("f", 20000, { min_frontier_items = 1001, min_reuse_count = 99 }),
      cand("r", 20000, { min_reuse_count = 11 }),
      cand("b", 20000, { min_avoided_readback_bytes = 4097 }),
      cand("ok", 20000, { min_frontier_items = 1000, min_reuse_count = 10,
        min_avoided_readback_bytes = 4096 }) })
    assert.are.same({ "ok" }, r.selected)
    local why = {}
    for _, s in ipairs(r.skipped) do why[s.pass_id] = s.reason end
    assert.are.same({ f = "FrontierBelowThreshold", r = "ReuseBelowThreshold",
      b = "ReadbackBelowThreshold" }, why)
    assert.are.same({ "b", "f", "r" }, { r.skipped[1].pass_id, r.skipped[2].pass_id,
      r.skipped[3].pass_id })
    assert.are.equal("frontier_items 1000 < 1001", r.skipped[2].detail)
  end)

  it("budgets are charged in order; a pass over one is skipped, later ones may fit", function()
    local r = sel({ cand("a", 30000, { planning_cost_ns = 600, scratch_bytes = 100 }),
      cand("b", 20000, { planning_cost_ns = 500 }),
      cand("c", 15000, { scratch_bytes = 901 }),
      cand("d", 12000, { planning_cost_ns = 400, scratch_bytes = 900 }) })
    assert.are.same({ "a", "d" }, r.selected)
    assert.are.same({ { pass_id = "b", reason = "PlanningBudgetExceeded",
      detail = "planning 1100 ns > budget 1000" }, { pass_id = "c",
      reason = "ScratchBudgetExceeded", detail = "scratch 1001 bytes > budget 1000" } },
      r.skipped)
    assert.are.same({ 1000, 1000, 36000 }, { r.planning_ns, r.scratch_bytes,
      r.projected_speedup_bps })
    local t = tostring(r)
    assert.truthy(t:find("b%s+skip PlanningBudgetExceeded"), t)
    assert.truthy(t:find("projected speedup 3.6000x", 1, true), t)
  end)

  it("a mandatory pass below a threshold is skipped, not an error", function()
    local r = sel({ cand("m", 20000, { mandatory_when_profitable = true,
      min_reuse_count = 100, planning_cost_ns = 5000 }) })
    assert.are.same({}, r.selected)
    assert.are.same("ReuseBelowThreshold", r.skipped[1].reason)
    assert.are.same({ 10000, 1 }, { r.projected_speedup_bps, r.projected_speedup })
  end)

  it("errors", function()
    local cases = {
      { sel, { { cand("m", 20000, { mandatory_when_profitable = true,
        planning_cost_ns = 1001 }) } },
        "mandatory pass 'm' is profitable but over budget: planning 1001 ns > budget 1000 "
        .. "[PlanningBudgetExceeded]" },
      { sel, { { cand("m", 20000, { mandatory_when_profitable = true, scratch_bytes = 2000 }) } },
        "[ScratchBudgetExceeded]" },
      { sel, { { cand("x", 10000) } }, "pass 'x' expects 10000 bps, not a speedup" },
      { sel, { { cand("x", 12000), cand("x", 13000) } },
        "candidates[2] repeats pass 'x' of candidates[1]" },
      { sel, { { cand("", 12000) } }, "candidates[1].pass_id must be a non-empty string" },
      { sel, { { cand("x", 12000, { scratch_bytes = -1 }) } },
        "candidates[1].scratch_bytes must be an integer >= 0" },
      { sel, { { cand("x", 12000, { mandatory_when_profitable = 1 }) } },
        "candidates[1].mandatory_when_profitable must be a boolean" },
      { sel, { {}, { planning_budget_ns = false } },
        "input.planning_budget_ns must be an integer" },
      { sel, { {}, { scratch_budget_bytes = -1 } },
        "input.scratch_budget_bytes must be an integer" },
      { passes.select, { { candidates = {} } }, "input.planning_budget_ns must be an integer" },
      { passes.select, { { planning_budget_ns = 1, scratch_budget_bytes = 1 } },
        "input.candidates must be a table" },
    }
    for _, c in ipairs(cases) do
      local e = H.error_of(c[1], table.unpack(c[2]))
      assert.truthy(e:find("vyre.planners.passes.select: ", 1, true), e)
      assert.truthy(e:find(c[3], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
  end)
end)
