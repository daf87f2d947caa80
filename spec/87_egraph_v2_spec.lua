-- 87: e-graphs v2 (issue 25; docs/EGRAPH.md). §3, the scheduler and the run loop: the
-- iteration counter lives in the e-graph (a backoff scheduler reused across eg:run
-- calls), egg's can_stop fast-forward, `found` against `matches` with the scheduler's
-- count taken before `when` and guards, node_limit and time_limit checked inside an
-- iteration with rollback, eg:run with no rules. §2, the run model: rulesets and run
-- schedules, eg:lookup, eg:equiv, eg:search. Each case runs on the reference backend and
-- on the fake CUDA driver (#fakecuda, scripts/test.sh's fake pass) and, on a GPU, #gpu.
local vyre = require("vyre")
local H = require("spec.helpers")

local function backends()
  return {
    { name = "reference", tag = "", open = function() return vyre.backend("reference") end },
    { name = "fake CUDA driver's", tag = " #fakecuda", open = H.fake_backend },
    { name = "cuda", tag = " #gpu", open = function()
      return assert(require("vyre.cuda").device(0))
    end },
  }
end

-- n leaves (Num 0 .. n-1), each under an F; returns the e-graph.
local function fs(be, n)
  local eg = vyre.egraph(be)
  eg:op("F", 1)
  eg:op("G", 1)
  eg:op("Num", 0)
  eg:op("Cnt", 0)
  for i = 0, n - 1 do eg:add("F", eg:leaf("Num", i)) end
  return eg
end

for _, kind in ipairs(backends()) do
  describe("vyre.egraph v2 run loop on the " .. kind.name .. " backend" .. kind.tag, function()
    local be
    setup(function() be = kind.open() end)

    it("keeps the iteration counter across eg:run calls, so a reused backoff ban ends",
      function()
      -- 12 matches > match_limit 10: f-to-g is banned at iteration 1 until iteration 6.
      -- The counter rule changes the graph every iteration, so no fast-forward hides it.
      local eg = fs(be, 12)
      eg:leaf("Cnt", 0)
      eg:rule("f-to-g", "(F ?a)", "(G ?a)")
      eg:rule("count", "(Cnt ?n)", "(Cnt (+ ?n 1))")
      local sched = vyre.egraph.backoff({ match_limit = 10, ban_length = 5 })
      local seen = {}
      for call = 1, 8 do
        local rep = eg:run({ iterations = 1, scheduler = sched })
        assert.are.equal(call, rep[1].iteration)
        seen[call] = rep[1].matches["f-to-g"]
        local nodes = eg:size()
        -- 12 Num + 12 F + Cnt 0 .. Cnt call, and the 12 G from iteration 6 on
        assert.are.equal(25 + call + (call >= 6 and 12 or 0), nodes, "call " .. call)
      end
      assert.are.same({ 0, nil, nil, nil, nil, 12, 0, 0 }, seen)
      assert.are.equal(8, eg.iteration)
      -- a plain scheduler function sees the e-graph's iteration numbers too
      local its = {}
      eg:run({ iterations = 2, scheduler = function(it) its[#its + 1] = it return true end })
      assert.are.equal(9, its[1])
      assert.are.equal(10, its[#its])
    end)

    it("moves bans forward when an iteration changes nothing (egg's can_stop)", function()
      local eg = fs(be, 12)
      eg:rule("f-to-g", "(F ?a)", "(G ?a)")
      local rep = eg:run({ iterations = 10,
        scheduler = vyre.egraph.backoff({ match_limit = 10, ban_length = 5 }) })
      -- 1: found 12, dropped and banned until 6; nothing changed, so the ban moves
      -- forward instead of idling through iterations 2 to 5; 2: applied; 3: saturated
      assert.are.equal("saturated", rep.stop)
      assert.are.equal(3, #rep)
      assert.are.same({ "f-to-g" }, rep[1].fast_forward)
      assert.are.equal(12, rep[1].found["f-to-g"])
      assert.are.equal(0, rep[1].matches["f-to-g"])
      assert.are.equal(12, rep[2].matches["f-to-g"])
      assert.is_nil(rep[2].fast_forward)
      assert.are.equal(36, (eg:size()))
      -- can_stop itself: true with no ban; else the bans move by the wait to the first end
      local s = vyre.egraph.backoff({ match_limit = 1, ban_length = 4 })
      assert.is_true(s.can_stop(1))
      assert.is_false(s(1, "a", 2)) -- banned until 5
      assert.is_false(s(2, "b", 2)) -- banned until 6
      local done, unbanned = s.can_stop(2)
      assert.is_false(done)
      assert.are.same({ "a" }, unbanned) -- a until 2, b until 3
      assert.is_true(s(3, "a", nil))
      assert.is_false(s(2, "b", nil))
      assert.is_true(s(3, "b", nil))
    end)

    it("reports found and applied matches, counting before `when` and guards", function()
      local calls = {}
      local function sched(it, name, m)
        if m then calls[#calls + 1] = { it, name, m } end
        return m == nil or m <= 10
      end
      local eg = fs(be, 12)
      eg:rule("small-when", "(F (Num ?x))", "(G (Num ?x))", { when = "(< ?x 3)" })
      eg:rule("small-guard", "(F (Num ?x))", "(G (Num ?x))",
        { guard = function(s) return s.x < 3 end })
      local rep = eg:run({ iterations = 1, scheduler = sched })
      -- 12 matches before the predicate: more than the scheduler's 10, so both dropped
      assert.are.same({ { 1, "small-when", 12 }, { 1, "small-guard", 12 } }, calls)
      assert.are.same({ ["small-when"] = 12, ["small-guard"] = 12 }, rep[1].found)
      assert.are.same({ ["small-when"] = 0, ["small-guard"] = 0 }, rep[1].matches)
      -- with a scheduler that lets them through, 3 pass the predicate and are applied
      local eg2 = fs(be, 12)
      eg2:rule("small-when", "(F (Num ?x))", "(G (Num ?x))", { when = "(< ?x 3)" })
      eg2:rule("small-guard", "(F (Num ?x))", "(G (Num ?x))",
        { guard = function(s) return s.x < 3 end })
      rep = eg2:run({ iterations = 1, scheduler = vyre.egraph.simple() })
      assert.are.same({ ["small-when"] = 12, ["small-guard"] = 12 }, rep[1].found)
      assert.are.same({ ["small-when"] = 3, ["small-guard"] = 3 }, rep[1].matches)
      assert.are.equal(27, (eg2:size()))
    end)

    it("rolls back an iteration that would pass node_limit", function()
      -- each iteration wraps in one more G: 24, 48, 72, 96, ... e-nodes
      local function make()
        local eg = fs(be, 12)
        eg:rule("wrap", "(F ?a)", "(F (G ?a))")
        return eg
      end
      local ref = make()
      ref:run({ iterations = 2, scheduler = vyre.egraph.simple() })
      local eg = make()
      local rep = eg:run({ iterations = 10, node_limit = 80, scheduler = vyre.egraph.simple() })
      assert.are.equal("node_limit", rep.stop)
      assert.are.equal(3, #rep)
      assert.are.same({ reason = "node_limit", phase = "apply", nodes = 96 }, rep[3].rolled_back)
      assert.are.equal(72, rep[3].nodes)
      assert.are.equal(72, (eg:size()))
      -- exactly the e-graph of two iterations: same ids, rows and classes
      assert.are.equal(ref:dot(), eg:dot())
      -- and it goes on from there
      rep = eg:run({ iterations = 1, node_limit = 1000, scheduler = vyre.egraph.simple() })
      ref:run({ iterations = 1, scheduler = vyre.egraph.simple() })
      assert.are.equal(ref:dot(), eg:dot())
      assert.are.equal(4, rep[1].iteration)
      -- rollback = false finishes the iteration and stops after it (the old way)
      local eg3 = make()
      rep = eg3:run({ iterations = 10, node_limit = 80, rollback = false,
        scheduler = vyre.egraph.simple() })
      assert.are.equal("node_limit", rep.stop)
      assert.are.equal(96, rep[#rep].nodes)
      assert.is_nil(rep[#rep].rolled_back)
    end)

    it("checks time_limit between rules and rolls the iteration back", function()
      local eg = fs(be, 12)
      eg:rule("f-to-g", "(F ?a)", "(G ?a)")
      eg:rule("g-to-f", "(G ?a)", "(F ?a)")
      local rep = eg:run({ time_limit = 0, scheduler = vyre.egraph.simple() })
      assert.are.equal("time_limit", rep.stop)
      assert.are.equal(1, #rep)
      assert.are.same({ reason = "time_limit", phase = "search" }, rep[1].rolled_back)
      assert.are.equal(24, (eg:size()))
      -- the rules were not marked searched: a later run applies the matches
      rep = eg:run({ iterations = 1, scheduler = vyre.egraph.simple() })
      assert.are.equal(12, rep[1].matches["f-to-g"])
      assert.are.equal(36, (eg:size()))
    end)

    it("rebuilds on eg:run with no rules (egglog's (run 1))", function()
      local eg = vyre.egraph(be)
      eg:op("f", 1)
      eg:op("x", 0)
      local a, b = eg:leaf("x", 1), eg:leaf("x", 2)
      local fa, fb = eg:add("f", a), eg:add("f", b)
      eg:union(a, b)
      local rep = eg:run({ iterations = 3 })
      assert.are.equal("saturated", rep.stop)
      assert.are.equal(1, #rep)
      assert.are.same({}, rep[1].matches)
      assert.are.equal(eg:find(fa), eg:find(fb))
      assert.are.equal(3, (eg:size()))
    end)
  end)
end
