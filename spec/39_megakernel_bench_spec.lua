-- 39: the megakernel benchmark's workloads (bench/megakernel), small, on the reference
-- backend: each workload's result passes its plain-Lua check in every mode, the modes
-- agree bit for bit and on the rounds (the megakernel too, where be:megakernel exists),
-- the checks catch a corrupted result, generation is deterministic per seed, and the
-- report and the speedup gate's CSV come out. The #gpu half runs the same small
-- workloads on CUDA and compares every result with the reference's.
local vyre = require("vyre")
local common = require("bench.megakernel.common")
local suite = require("bench.megakernel.suite")

local function small(name)
  local s = {}
  for k, v in pairs(suite.SIZES.small[name]) do s[k] = v end
  s.seed = 7
  return s
end

local function workload(name)
  for _, W in ipairs(suite.WORKLOADS) do if W.name == name then return W end end
end

describe("megakernel bench workloads (reference, small)", function()
  local ref, res

  setup(function()
    ref = vyre.backend("reference")
    res = suite.run(ref, { size = "small", samples = 1, seed = 3 })
  end)

  it("runs every workload (the four of issue 10 first; issue 23's are spec 96's)", function()
    local names, want = {}, {}
    for i, r in ipairs(res.workloads) do names[i] = r.name end
    for i, W in ipairs(suite.WORKLOADS) do want[i] = W.name end
    assert.are.same(want, names)
    assert.are.same(suite.FLAG_WORKLOADS, { names[1], names[2], names[3], names[4] })
  end)

  it("every result passes its plain-Lua check and the modes agree", function()
    for _, r in ipairs(res.workloads) do
      assert.is_true(r.check.ok, r.name .. ": " .. tostring(r.check.msg))
      assert.are.equal(true, r.agree, r.name)
      local h, g = r.modes.host_loop.samples[1], r.modes.graph.samples[1]
      assert.are.equal(h.rounds, g.rounds, r.name)
      assert.is_true(h.rounds > 1 or r.name == "cc", r.name) -- cc runs its pipeline once
      local k = r.modes.megakernel
      if k.samples then
        assert.are.equal(h.rounds, k.samples[1].rounds, r.name .. " megakernel rounds")
      else
        assert.are.equal("be:megakernel is not available in this build", k.unavailable)
      end
    end
  end)

  it("the report has a row per workload", function()
    local md = suite.markdown(res)
    assert.truthy(md:find("| workload | size | rounds | check | host loop | graph | megakernel",
      1, true))
    for _, r in ipairs(res.workloads) do
      assert.truthy(md:find("| " .. r.name .. " | ", 1, true), r.name)
    end
    local g, why = suite.gate(res, { backend = "reference", min_memory_bytes = 0, min_cc = "0.0",
      min_nodes = 1, min_edges = 1, min_repetitions = 1, min_samples = 1, factor = 0.001 })
    if common.has_megakernel(ref) then
      assert.truthy(g.csv:find(vyre.planners.speedup_gate.HEADER, 1, true))
      for _, v in pairs(g.verdicts) do assert.is_boolean(v.pass) end
    else
      assert.is_nil(g)
      assert.truthy(why:find("be:megakernel is not available", 1, true))
    end
  end)

  it("the checks catch a wrong result", function()
    for _, name in ipairs({ "bfs_grid", "dataflow", "jacobi", "rmat" }) do
      local inst = workload(name).setup(ref, small(name))
      inst.reset()
      local rounds = common.host_loop(ref, inst)
      assert.is_true((inst.check(rounds)), name)
      -- the frontier BFSs know their exact rounds (depth + 1); every check refuses a run
      -- that hit the round cap
      if name == "bfs_grid" or name == "rmat" then
        assert.is_false((inst.check(rounds - 1)), name .. " rounds")
      end
      assert.is_false((inst.check(inst.max_rounds)), name .. " cap")
      -- one element changed
      local arr = inst.output:download()
      local i = #arr // 2 + 1
      arr[i] = inst.output.type == "f32" and arr[i] + 0.5 or (arr[i] ~ 1)
      inst.output:upload(arr)
      local ok, msg = inst.check(rounds)
      assert.is_false(ok, name)
      assert.is_string(msg)
    end
  end)

  it("generation is deterministic per seed and differs between seeds", function()
    local G, D = workload("bfs_grid"), workload("dataflow")
    assert.are.same(G.masks(16, 8, 5), G.masks(16, 8, 5))
    assert.are_not.same(G.masks(16, 8, 5), G.masks(16, 8, 6))
    local a, b = D.generate(100, 2, 5), D.generate(100, 2, 5)
    assert.are.same(a.preds, b.preds)
    assert.are.same(a.gen, b.gen)
    assert.are_not.same(a.gen, D.generate(100, 2, 6).gen)
    local r = common.rng(42)
    local x = { r(), r:float(), r:int(10) }
    local s = common.rng(42)
    assert.are.same(x, { s(), s:float(), s:int(10) })
    assert.is_true(x[2] >= 0 and x[2] < 1 and x[3] >= 1 and x[3] <= 10)
  end)

  it("the plain-Lua reaching definitions reach the fixpoint of the transfer", function()
    local D = workload("dataflow")
    local g = D.generate(300, 2, 11)
    local out = D.solve(g)
    for b = 0, g.blocks - 1 do
      for w = 1, g.words do
        local acc = 0
        for k = g.pred_off[b + 1] + 1, g.pred_off[b + 2] do
          acc = acc | out[g.preds[k] * g.words + w]
        end
        local i = b * g.words + w
        assert.are.equal(g.gen[i] | (acc & g.keep[i]), out[i])
      end
    end
  end)
end)

-- A stand-in backend: the reference backend plus a megakernel method, so the suite's
-- megakernel path (timing, agreement, the gate's CSV, a failing mode) runs before
-- be:megakernel exists.
local function with_megakernel(ref, mk)
  return setmetatable({}, { __index = function(_, k)
    if k == "megakernel" then return mk end
    local v = ref[k]
    if type(v) == "function" then return function(_, ...) return v(ref, ...) end end
    return v
  end })
end

describe("megakernel bench: the megakernel path", function()
  it("a megakernel that iterates on the host agrees and yields the gate's CSV", function()
    local ref = vyre.backend("reference")
    local be = with_megakernel(ref, function(_, steps, opts)
      local flag, max = opts.converge.flag, opts.converge.max
      for r = 1, max do
        flag:zero()
        ref:sequence(steps)
        if flag:download()[1] == 0 then return r end
      end
      return max
    end)
    local res = suite.run(be, { size = "small", samples = 2, only = { "jacobi", "rmat" } })
    for _, r in ipairs(res.workloads) do
      assert.are.equal(true, r.agree, r.name)
      assert.are.equal(r.modes.host_loop.samples[1].rounds, r.modes.megakernel.samples[2].rounds)
    end
    local g = suite.gate(res, { backend = "reference", min_memory_bytes = 0, min_cc = "0.0",
      min_nodes = 1, min_edges = 1, min_repetitions = 1, factor = 0.001 })
    local lines = {}
    for l in g.csv:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal(5, #lines) -- the header and two samples per workload
    assert.are.equal(vyre.planners.speedup_gate.HEADER, lines[1])
    -- it launches every step of every round: the gate sees the extra dispatches
    assert.is_false(g.verdicts.jacobi.pass)
    assert.truthy(g.verdicts.jacobi.failures[1]:find(
      "resident_borrowed_fallback_dispatches = 69 inside the timed region", 1, true))
    assert.truthy(suite.markdown(res):find("| jacobi |", 1, true))
  end)

  it("a megakernel that raises fails its workload, not the run", function()
    local ref = vyre.backend("reference")
    local be = with_megakernel(ref, function() error("megakernel: boom", 0) end)
    local res = suite.run(be, { size = "small", samples = 1, only = { "jacobi" } })
    local r = res.workloads[1]
    assert.are.equal("megakernel: boom", r.modes.megakernel.failed)
    assert.are.equal("megakernel raised: megakernel: boom", r.agree)
    assert.is_true(r.check.ok)
    assert.truthy(suite.markdown(res):find("| failed |", 1, true))
    assert.is_nil((suite.gate(res)))
  end)
end)

describe("megakernel bench workloads on CUDA match the reference #gpu", function()
  it("every small workload gives the reference's bytes and rounds", function()
    local gpu = assert(require("vyre.cuda").device(0))
    local ref = vyre.backend("reference")
    for _, W in ipairs(suite.WORKLOADS) do
      local a, b = W.setup(ref, small(W.name)), W.setup(gpu, small(W.name))
      a.reset()
      b.reset()
      local ra = common.host_loop(ref, a)
      local rb = common.graph(gpu, b)
      assert.are.equal(ra, rb, W.name .. " rounds")
      assert.is_true(common.bytes(a.output) == common.bytes(b.output), W.name .. " bytes")
      assert.is_true((b.check(rb)), W.name)
    end
  end)
end)
