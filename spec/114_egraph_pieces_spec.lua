-- 114: e-graphs, issue 25 §6 (docs/EGRAPH.md, "Applying in pieces"). eg:run's apply_rows
-- caps the rows an iteration stages between rebuilds: the matches go in pieces with a
-- rebuild after each, and a rule whose matches alone pass the cap in slices of its
-- substitutions. The math workload run that way gives the e-nodes and e-classes of a run
-- in one piece at every iteration (and egglog's: bench/eqsat/README.md), the same matches
-- per rule when every match is searched, and, when no rule is sliced, the same canonical
-- ids and extractions. Each case runs on the reference backend, on the fake CUDA driver
-- (#fakecuda, scripts/test.sh's fake pass) and, on a GPU, #gpu.
local vyre = require("vyre")
local H = require("spec.helpers")
local MW = require("bench.eqsat.math")

local function backends()
  return H.only_loaded({
    { name = "reference", tag = "", open = function() return vyre.backend("reference") end },
    { name = "fake CUDA driver's", tag = " #fakecuda", open = H.fake_backend },
    { name = "cuda", tag = " #gpu", open = function()
      return assert(require("vyre.cuda").device(0))
    end },
  })
end

-- Runs the math workload `iters` iterations, one eg:run each with opts added; returns the
-- e-graph, its roots and the reports (one per iteration).
local function math_run(be, iters, opts)
  local eg = vyre.egraph(be)
  local roots = MW.setup(eg)
  eg:rebuild()
  local sched = vyre.egraph.simple()
  local reps = {}
  for i = 1, iters do
    local o = { iterations = 1, node_limit = 1e12, time_limit = 1e12, scheduler = sched }
    for k, v in pairs(opts) do o[k] = v end
    eg.apply_slices = nil
    reps[i] = eg:run(o)[1]
    reps[i].slices = eg.apply_slices or 0
  end
  return eg, roots, reps
end

-- egg's AstSize, with a leaf costing less so that ties are rare
local COST = {}
for _, o in ipairs(MW.OPS) do COST[o[1]] = o[2] == 0 and 1 or 2 end

for _, B in ipairs(backends()) do
  describe("114 applying in pieces on the " .. B.name .. " backend" .. B.tag, function()
    local be
    setup(function() be = B.open() end)

    it("sliced rules: the e-nodes, e-classes and naive matches of one piece", function()
      local _, _, whole = math_run(be, 6, { semi_naive = false })
      local eg, _, cut = math_run(be, 6, { semi_naive = false, apply_rows = 60 })
      for i = 1, 6 do
        assert.are.equal(whole[i].nodes, cut[i].nodes, "e-nodes at iteration " .. i)
        assert.are.equal(whole[i].classes, cut[i].classes, "e-classes at iteration " .. i)
        assert.are.same(whole[i].matches, cut[i].matches, "matches at iteration " .. i)
      end
      -- egglog's e-nodes and e-classes (bench/eqsat/README.md)
      assert.are.same({ 69, 118, 208, 389, 784, 1576 },
        { cut[1].nodes, cut[2].nodes, cut[3].nodes, cut[4].nodes, cut[5].nodes, cut[6].nodes })
      assert.are.same({ 50, 71, 116, 197, 361, 666 }, { cut[1].classes, cut[2].classes,
        cut[3].classes, cut[4].classes, cut[5].classes, cut[6].classes })
      -- the last iteration really went in pieces, and rules were sliced (rows past 60)
      assert.is_true(eg.apply_pieces > 10, "pieces: " .. tostring(eg.apply_pieces))
      assert.is_true(eg.apply_slices > 0, "slices: " .. tostring(eg.apply_slices))
      -- the backend's high-water mark of buffer bytes (bench/eqsat's peak_MB)
      local st = be:stats()
      assert.is_true(st.live_buffer_bytes > 0)
      assert.is_true(st.peak_buffer_bytes >= st.live_buffer_bytes)
      eg:free()
    end)

    it("whole rules per piece: the same canonical ids, counts and extractions", function()
      local eg1, roots1, whole = math_run(be, 6, {})
      local eg2, roots2, cut = math_run(be, 6, { apply_rows = 700 })
      assert.is_true(eg2.apply_pieces >= 2, "pieces: " .. tostring(eg2.apply_pieces))
      for i = 1, 6 do
        assert.are.equal(whole[i].nodes, cut[i].nodes)
        assert.are.equal(whole[i].classes, cut[i].classes)
        assert.are.same(whole[i].matches, cut[i].matches, "matches at iteration " .. i)
        assert.are.equal(0, cut[i].slices)
      end
      for i, r in ipairs(roots1) do
        assert.are.equal(eg1:find(r), eg2:find(roots2[i]))
        local _, t1, c1 = eg1:extract(r, COST)
        local _, t2, c2 = eg2:extract(roots2[i], COST)
        assert.are.equal(c1, c2)
        assert.are.equal(t1, t2)
      end
      eg1:free()
      eg2:free()
    end)

    it("refuses an apply_rows that is not a positive integer, naming the fix", function()
      local eg = vyre.egraph(be)
      MW.setup(eg)
      for _, bad in ipairs({ 0, -5, 1.5, "many" }) do
        local ok, err = pcall(eg.run, eg, { iterations = 1, apply_rows = bad })
        assert.is_false(ok)
        assert.matches("apply_rows must be a positive integer", tostring(err), 1, true)
        assert.matches("Fix:", tostring(err), 1, true)
      end
      eg:free()
    end)
  end)
end
