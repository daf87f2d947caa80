-- 114: e-graphs, issue 25 §6 (docs/EGRAPH.md, "Applying in pieces"). eg:run's apply_rows
-- caps the rows an iteration stages between rebuilds: the matches go in pieces with a
-- rebuild after each, and a rule whose rows alone pass the cap in segments of its rows.
-- The math workload run that way gives, at every iteration, what a run in one piece
-- gives: the e-nodes and e-classes (egglog's: bench/eqsat/README.md), the matches per
-- rule (semi-naive or every match), every e-class's canonical id and e-nodes, the roots'
-- extractions and the next id. Each case runs on the reference backend, on the fake CUDA
-- driver (#fakecuda, scripts/test.sh's fake pass) and, on a GPU, #gpu.
local vyre = require("vyre")
local H = require("spec.helpers")
local MW = require("bench.eqsat.math")

local backends = H.three_backends -- reference, fake driver, GPU

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
    reps[i] = eg:run(o)[1]
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

    -- The run in pieces against the run in one piece: every iteration's counts and
    -- matches, the roots' canonical ids and their extractions.
    local function same_as_one_piece(opts, iters)
      local eg1, roots1, whole = math_run(be, iters, { semi_naive = opts.semi_naive })
      local eg2, roots2, cut = math_run(be, iters, opts)
      for i = 1, iters do
        assert.are.equal(whole[i].nodes, cut[i].nodes, "e-nodes at iteration " .. i)
        assert.are.equal(whole[i].classes, cut[i].classes, "e-classes at iteration " .. i)
        assert.are.same(whole[i].matches, cut[i].matches, "matches at iteration " .. i)
      end
      for i, r in ipairs(roots1) do
        assert.are.equal(eg1:find(r), eg2:find(roots2[i]))
        local _, t1, c1 = eg1:extract(r, COST)
        local _, t2, c2 = eg2:extract(roots2[i], COST)
        assert.are.equal(c1, c2)
        assert.are.equal(t1, t2)
      end
      -- every e-class has the same canonical id and the same e-nodes
      local ids = eg1:classes()
      assert.are.same(ids, eg2:classes())
      local function nodes(eg, c)
        local out = {}
        for _, nd in ipairs(eg:nodes(c)) do
          local t = { nd.op, tostring(nd.payload) }
          for k = 1, #nd do t[#t + 1] = tostring(nd[k]) end
          out[#out + 1] = table.concat(t, " ")
        end
        table.sort(out)
        return out
      end
      for _, c in ipairs(ids) do assert.are.same(nodes(eg1, c), nodes(eg2, c)) end
      -- a new term gets the same id: the id counters agree
      assert.are.equal(eg1:leaf("Const", 12345), eg2:leaf("Const", 12345))
      eg1:free()
      return eg2, cut
    end

    it("rules in segments: the counts, matches, ids and extractions of one piece", function()
      local eg, cut = same_as_one_piece({ apply_rows = 60 }, 6)
      -- egglog's e-nodes and e-classes (bench/eqsat/README.md)
      assert.are.same({ 69, 118, 208, 389, 784, 1576 },
        { cut[1].nodes, cut[2].nodes, cut[3].nodes, cut[4].nodes, cut[5].nodes, cut[6].nodes })
      assert.are.same({ 50, 71, 116, 197, 361, 666 }, { cut[1].classes, cut[2].classes,
        cut[3].classes, cut[4].classes, cut[5].classes, cut[6].classes })
      -- the last iteration really went in pieces, and rules in segments (rows past 60)
      assert.is_true(cut[6].pieces > 10, "pieces: " .. tostring(cut[6].pieces))
      assert.is_true(cut[6].segments > 0, "segments: " .. tostring(cut[6].segments))
      -- the backend's high-water mark of buffer bytes (bench/eqsat's peak_MB)
      local st = be:stats()
      assert.is_true(st.live_buffer_bytes > 0)
      assert.is_true(st.peak_buffer_bytes >= st.live_buffer_bytes)
      eg:free()
    end)

    it("rules in segments, every match searched: the same as one piece", function()
      local eg = same_as_one_piece({ apply_rows = 45, semi_naive = false }, 5)
      eg:free()
    end)

    it("whole rules per piece: the same as one piece", function()
      local eg, cut = same_as_one_piece({ apply_rows = 700 }, 6)
      assert.is_true(cut[6].pieces >= 2, "pieces: " .. tostring(cut[6].pieces))
      for i = 1, 6 do assert.are.equal(0, cut[i].segments or 0) end
      eg:free()
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
