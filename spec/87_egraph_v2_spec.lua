-- 87: e-graphs v2 (issue 25; docs/EGRAPH.md). §3, the scheduler and the run loop: the
-- iteration counter lives in the e-graph (a backoff scheduler reused across eg:run
-- calls), egg's can_stop fast-forward, `found` against `matches` with the scheduler's
-- count taken before `when` and guards, node_limit and time_limit checked inside an
-- iteration with rollback, eg:run with no rules. §2, the run model: rulesets and run
-- schedules, eg:lookup, eg:equiv, eg:search. Each case runs on the reference backend and
-- on the fake CUDA driver (#fakecuda, scripts/test.sh's fake pass) and, on a GPU, #gpu.
local vyre = require("vyre")
local H = require("spec.helpers")

-- Run options with a generous time_limit unless the case sets one: the fake driver
-- compiles and interprets every kernel, and a cold first iteration may pass the default
-- 5 s, which (since time_limit is checked between rules) would cut it short.
local function T(o)
  if o.time_limit == nil then o.time_limit = 600 end
  return o
end

local backends = H.three_backends -- reference, fake driver, GPU

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
        local rep = eg:run(T{ iterations = 1, scheduler = sched })
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
      eg:run(T{ iterations = 2, scheduler = function(it) its[#its + 1] = it return true end })
      assert.are.equal(9, its[1])
      assert.are.equal(10, its[#its])
    end)

    it("moves bans forward when an iteration changes nothing (egg's can_stop)", function()
      local eg = fs(be, 12)
      eg:rule("f-to-g", "(F ?a)", "(G ?a)")
      local rep = eg:run(T{ iterations = 10,
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
      local rep = eg:run(T{ iterations = 1, scheduler = sched })
      -- 12 matches before the predicate: more than the scheduler's 10, so both dropped
      assert.are.same({ { 1, "small-when", 12 }, { 1, "small-guard", 12 } }, calls)
      assert.are.same({ ["small-when"] = 12, ["small-guard"] = 12 }, rep[1].found)
      assert.are.same({ ["small-when"] = 0, ["small-guard"] = 0 }, rep[1].matches)
      -- with a scheduler that lets them through, 3 pass the predicate and are applied
      local eg2 = fs(be, 12)
      eg2:rule("small-when", "(F (Num ?x))", "(G (Num ?x))", { when = "(< ?x 3)" })
      eg2:rule("small-guard", "(F (Num ?x))", "(G (Num ?x))",
        { guard = function(s) return s.x < 3 end })
      rep = eg2:run(T{ iterations = 1, scheduler = vyre.egraph.simple() })
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
      ref:run(T{ iterations = 2, scheduler = vyre.egraph.simple() })
      local eg = make()
      local rep = eg:run(T{ iterations = 10, node_limit = 80, scheduler = vyre.egraph.simple() })
      assert.are.equal("node_limit", rep.stop)
      assert.are.equal(3, #rep)
      assert.are.same({ reason = "node_limit", phase = "apply", nodes = 96 }, rep[3].rolled_back)
      assert.are.equal(72, rep[3].nodes)
      assert.are.equal(72, (eg:size()))
      -- exactly the e-graph of two iterations: same ids, rows and classes
      assert.are.equal(ref:dot(), eg:dot())
      -- and it goes on from there
      rep = eg:run(T{ iterations = 1, node_limit = 1000, scheduler = vyre.egraph.simple() })
      ref:run(T{ iterations = 1, scheduler = vyre.egraph.simple() })
      assert.are.equal(ref:dot(), eg:dot())
      assert.are.equal(4, rep[1].iteration)
      -- rollback = false finishes the iteration and stops after it (the old way)
      local eg3 = make()
      rep = eg3:run(T{ iterations = 10, node_limit = 80, rollback = false,
        scheduler = vyre.egraph.simple() })
      assert.are.equal("node_limit", rep.stop)
      assert.are.equal(96, rep[#rep].nodes)
      assert.is_nil(rep[#rep].rolled_back)
    end)

    it("checks time_limit between rules and stops the iteration there", function()
      local eg = fs(be, 12)
      eg:rule("f-to-g", "(F ?a)", "(G ?a)")
      eg:rule("g-to-f", "(G ?a)", "(F ?a)")
      local rep = eg:run(T{ time_limit = 0, scheduler = vyre.egraph.simple() })
      assert.are.equal("time_limit", rep.stop)
      assert.are.equal(1, #rep)
      assert.are.same({ reason = "time_limit", phase = "search" }, rep[1].interrupted)
      assert.is_nil(rep[1].rolled_back)
      assert.are.equal(24, (eg:size()))
      -- the rules were not marked searched: a later run applies the matches
      rep = eg:run(T{ iterations = 1, scheduler = vyre.egraph.simple() })
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
      local rep = eg:run(T{ iterations = 3 })
      assert.are.equal("saturated", rep.stop)
      assert.are.equal(1, #rep)
      assert.are.same({}, rep[1].matches)
      assert.are.equal(eg:find(fa), eg:find(fb))
      assert.are.equal(3, (eg:size()))
    end)
  end)
end

-- egglog's tests/eqsat-basic.egg: Num, Var (x = 1), Add, Mul; commutativity,
-- distributivity and constant folding; `(check (= expr1 expr2))`.
local BASIC_OPS = { { "Num", 0 }, { "Var", 0 }, { "Add", 2 }, { "Mul", 2 } }
local BASIC_RULES = {
  { "comm-add", "(Add ?a ?b)", "(Add ?b ?a)" },
  { "distribute", "(Mul ?a (Add ?b ?c))", "(Add (Mul ?a ?b) (Mul ?a ?c))" },
  { "fold-add", "(Add (Num ?a) (Num ?b))", "(Num (+ ?a ?b))" },
  { "fold-mul", "(Mul (Num ?a) (Num ?b))", "(Num (* ?a ?b))" },
}
local EXPR1 = "(Mul (Num 2) (Add (Var 1) (Num 3)))"
local EXPR2 = "(Add (Num 6) (Mul (Num 2) (Var 1)))"

local function basic(be, rs)
  local eg = vyre.egraph(be)
  for _, o in ipairs(BASIC_OPS) do eg:op(o[1], o[2]) end
  if rs then eg:ruleset(rs) end
  for _, r in ipairs(BASIC_RULES) do eg:rule(r[1], r[2], r[3], { ruleset = rs }) end
  local MW = require("bench.eqsat.math")
  return eg, MW.add_term(eg, EXPR1), MW.add_term(eg, EXPR2)
end

for _, kind in ipairs(backends()) do
  describe("vyre.egraph v2 run model on the " .. kind.name .. " backend" .. kind.tag, function()
    local be
    setup(function() be = kind.open() end)

    it("ports egglog's eqsat-basic: (run 10) then (check (= expr1 expr2))", function()
      local eg, e1, e2 = basic(be)
      assert.is_false(eg:equiv(EXPR1, EXPR2))
      local rep = eg:run(T{ iterations = 10, scheduler = vyre.egraph.simple() })
      assert.are.equal("saturated", rep.stop)
      assert.is_true(eg:equiv(EXPR1, EXPR2))
      assert.is_true(eg:equiv(e1, e2))
      assert.are.equal(eg:find(e1), eg:lookup(EXPR2))
      -- :until stops as soon as the goal holds, before saturation
      local eg2 = basic(be)
      local rep2 = eg2:run(T{ iterations = 10, scheduler = vyre.egraph.simple(),
        until_ = { EXPR1, EXPR2 } })
      assert.are.equal("until", rep2.stop)
      assert.is_true(#rep2 < #rep)
      assert.is_true(eg2:equiv(EXPR1, EXPR2))
      assert.is_false(basic(be):equiv(EXPR1, EXPR2)) -- not before the run
      -- a goal that holds at the start runs nothing
      local rep3 = eg2:run(T{ iterations = 10, until_ = { { EXPR1, EXPR2 }, { e1, e2 } } })
      assert.are.equal("until", rep3.stop)
      assert.are.equal(0, #rep3)
    end)

    it("ports egg's simple test: (* 0 42) is 0 and (+ 0 (* 1 foo)) is foo", function()
      local eg = vyre.egraph(be)
      eg:op("Add", 2)
      eg:op("Mul", 2)
      eg:op("Num", 0)
      eg:op("Sym", 0)
      eg:rule("commute-add", "(Add ?a ?b)", "(Add ?b ?a)")
      eg:rule("commute-mul", "(Mul ?a ?b)", "(Mul ?b ?a)")
      eg:rule("add-0", "(Add ?a (Num 0))", "?a")
      eg:rule("mul-0", "(Mul ?a (Num 0))", "(Num 0)")
      eg:rule("mul-1", "(Mul ?a (Num 1))", "?a")
      local MW = require("bench.eqsat.math")
      local t1 = MW.add_term(eg, "(Mul (Num 0) (Num 42))")
      local t2 = MW.add_term(eg, "(Add (Num 0) (Mul (Num 1) (Sym 7)))")
      local rep = eg:run(T{})
      assert.are.equal("saturated", rep.stop)
      assert.is_true(eg:equiv(t1, "(Num 0)"))
      assert.is_true(eg:equiv(t2, "(Sym 7)"))
      local _, text = eg:extract(t2, { Add = 1, Mul = 1, Num = 1, Sym = 1 })
      assert.are.equal("(Sym 7)", text)
    end)

    it("looks terms up without adding, and searches patterns without rewriting", function()
      local eg, e1 = basic(be)
      eg:rebuild()
      local nodes, ids = eg:size(), eg.nids
      assert.is_nil(eg:lookup("(Add (Num 3) (Var 1))")) -- commuted: not in the graph
      assert.are.equal(e1, eg:lookup(EXPR1))
      assert.is_nil(eg:lookup("(Num 4)"))
      assert.are.equal(nodes, (eg:size()))
      assert.are.equal(ids, eg.nids)
      local subs = eg:search("(Add ?a (Num ?n))")
      assert.are.equal(1, #subs)
      assert.are.equal(eg:lookup("(Add (Var 1) (Num 3))"), subs[1].root)
      assert.are.equal(eg:lookup("(Var 1)"), subs[1].a)
      assert.are.equal(3, subs[1].n)
      assert.are.same({}, eg:search("(Mul ?a ?a)"))
      -- negative and 64-bit payloads come back whole
      local big = eg:leaf("Num", -(1 << 40) - 5)
      local found = eg:search("(Num ?v)")
      local vals = {}
      for _, s in ipairs(found) do vals[#vals + 1] = s.v end
      table.sort(vals)
      assert.are.same({ -(1 << 40) - 5, 2, 3, 6 }, vals)
      assert.are.equal(big, eg:lookup(("(Num %d)"):format(-(1 << 40) - 5)))
      -- lookup sees unions and congruence (it rebuilds first)
      local x = eg:lookup("(Var 1)")
      eg:union(x, eg:lookup("(Num 3)"))
      local sum = eg:lookup("(Add (Num 3) (Num 3))") -- congruent to (Add (Var 1) (Num 3))
      assert.is_number(sum)
      assert.are.equal(eg:lookup("(Add (Var 1) (Num 3))"), sum)
      -- both are now Add(c, c) with c = {Var 1, Num 3}: the commuted term is there too
      assert.is_true(eg:equiv("(Add (Var 1) (Num 3))", "(Add (Num 3) (Var 1))"))
      assert.is_false(eg:equiv(EXPR1, "(Num 99)")) -- absent
      assert.is_false(eg:equiv(EXPR1, "(Num 6)")) -- present, another class
      assert.is_true(eg:equiv("(Var 1)", "(Num 3)"))
      assert.are.equal(eg:find(x), eg:lookup(x))
      for _, c in ipairs({
        { function() eg:lookup("(Add ?a (Num 1))") end, "has variables" },
        { function() eg:lookup(3.5) end, "S-expression string or an e-class id" },
        { function() eg:lookup("(Sub (Num 1) (Num 2))") end, "unknown op 'Sub'" },
        { function() eg:search("?a") end, "bare variable" },
        { function() eg:equiv("(Num 1)", 1e9) end, "e-class id" },
      }) do
        local err = H.error_of(c[1])
        assert.matches("vyre.EGraph:[a-z]+: ", err)
        assert.is_truthy(err:find(c[2], 1, true), err)
        assert.is_truthy(err:find("Fix: ", 1, true), err)
      end
    end)

    it("runs rulesets and schedules (seq, saturate, repeat_, run with times and until_)",
      function()
      local eg = vyre.egraph(be)
      eg:op("Num", 0)
      eg:op("Cnt", 0)
      eg:op("Add", 2)
      eg:ruleset("fold")
      eg:ruleset("count")
      eg:rule("fold-add", "(Add (Num ?a) (Num ?b))", "(Num (+ ?a ?b))", { ruleset = "fold" })
      eg:rule("count", "(Cnt ?n)", "(Cnt (+ ?n 1))", { ruleset = "count" })
      eg:rule("comm", "(Add ?a ?b)", "(Add ?b ?a)") -- "default"
      local MW = require("bench.eqsat.math")
      local t = MW.add_term(eg, "(Add (Add (Num 1) (Num 2)) (Add (Num 3) (Num 4)))")
      eg:leaf("Cnt", 0)
      local simple = vyre.egraph.simple()
      -- a plain run runs the default ruleset only
      local rep = eg:run(T{ iterations = 1, scheduler = simple })
      assert.are.same({ comm = 3 }, rep[1].matches)
      assert.are.equal("default", rep[1].ruleset)
      -- a ruleset run
      rep = eg:run(T{ ruleset = "count", iterations = 2, scheduler = simple })
      assert.are.equal(2, #rep)
      assert.are.equal("count", rep[2].ruleset)
      assert.is_truthy(eg:lookup("(Cnt 2)"))
      -- repeat_ of a sequence: count, fold, count, fold
      rep = eg:run(T{ schedule = { repeat_ = 2, "count", { run = "fold" } }, scheduler = simple })
      assert.are.equal("schedule", rep.stop)
      local order = {}
      for i, r in ipairs(rep) do order[i] = r.ruleset end
      assert.are.same({ "count", "fold", "count", "fold" }, order)
      assert.is_true(eg:equiv(t, "(Num 10)"))
      assert.is_truthy(eg:lookup("(Cnt 4)"))
      -- saturate stops when a pass changes nothing; the count ruleset never would, so
      -- it runs with until_ inside a seq
      rep = eg:run(T{ schedule = { seq = { { saturate = { run = "fold" } },
        { run = "count", times = 10, until_ = { "(Cnt 0)", "(Cnt 7)" } } } },
        scheduler = simple })
      order = {}
      for i, r in ipairs(rep) do order[i] = r.ruleset end
      assert.are.same({ "fold", "count", "count", "count" }, order)
      assert.is_true(eg:equiv("(Cnt 0)", "(Cnt 7)"))
      assert.is_nil(eg:lookup("(Cnt 8)"))
      -- iterations continue across all of it: 1, 2-3, 4-7, then 8-11
      assert.are.equal(11, rep[#rep].iteration)
      -- a limit stops the whole schedule
      rep = eg:run(T{ schedule = { { run = "count", times = 5 }, "fold" }, node_limit = 18,
        scheduler = simple })
      assert.are.equal("node_limit", rep.stop)
      assert.are.equal("count", rep[#rep].ruleset)
      assert.is_truthy(rep[#rep].rolled_back)
      for _, c in ipairs({
        { function() eg:rule("r", "(Cnt ?n)", "(Cnt 1)", { ruleset = "nope" }) end,
          "unknown ruleset 'nope'" },
        { function() eg:ruleset("a b") end, "symbol string" },
        { function() eg:run(T{ ruleset = "nope" }) end, "unknown ruleset 'nope'" },
        { function() eg:run(T{ schedule = { run = "nope" } }) end, "unknown ruleset 'nope'" },
        { function() eg:run(T{ schedule = { loop = "fold" } }) end, "unknown schedule key" },
        { function() eg:run(T{ schedule = { run = "fold", times = -1 } }) end, "times" },
        { function() eg:run(T{ schedule = { repeat_ = 1.5, "fold" } }) end, "repeat_" },
        { function() eg:run(T{ schedule = 3 }) end, "a schedule must be" },
        { function() eg:run(T{ schedule = "fold", iterations = 3 }) end, "cannot be combined" },
        { function() eg:run(T{ until_ = { "(Cnt ?x)", "(Cnt 1)" } }) end, "has variables" },
        { function() eg:run(T{ until_ = "(Cnt 1)" }) end, "until_ must be a pair" },
        { function() eg:run(T{ rollback = 1 }) end, "rollback must be a boolean" },
      }) do
        local err = H.error_of(c[1])
        assert.matches("vyre.EGraph:r[a-z]+: ", err)
        assert.is_truthy(err:find(c[2], 1, true), err)
        assert.is_truthy(err:find("Fix: ", 1, true), err)
      end
    end)
  end)
end

for _, kind in ipairs(backends()) do
  describe("vyre.egraph v2 subsumption on the " .. kind.name .. " backend" .. kind.tag, function()
    local be
    setup(function() be = kind.open() end)

    local function graph()
      local eg = vyre.egraph(be)
      eg:op("Num", 0)
      eg:op("Var", 0)
      eg:op("Add", 2)
      eg:op("Mul", 2)
      return eg, require("bench.eqsat.math")
    end
    local COST = { Num = 1, Var = 1, Add = 10, Mul = 1 }

    it("subsumes the matched e-node of a rule with subsume = true (egglog's :subsume)",
      function()
      local eg, MW = graph()
      eg:rule("double", "(Mul ?a (Num 2))", "(Add ?a ?a)", { subsume = true })
      eg:rule("comm-mul", "(Mul ?a ?b)", "(Mul ?b ?a)")
      local t = MW.add_term(eg, "(Mul (Var 1) (Num 2))")
      local other = MW.add_term(eg, "(Mul (Var 1) (Num 5))")
      local rep = eg:run(T{ scheduler = vyre.egraph.simple() })
      assert.are.equal("saturated", rep.stop)
      -- still there for lookups, in its class with the rewrites
      assert.are.equal(eg:find(t), eg:lookup("(Mul (Var 1) (Num 2))"))
      assert.is_true(eg:equiv(t, "(Add (Var 1) (Var 1))"))
      assert.is_true(eg:equiv(t, "(Mul (Num 2) (Var 1))"))
      -- not matched any more: comm-mul re-derived it, and the duplicate stayed subsumed
      local roots = {}
      for _, s in ipairs(eg:search("(Mul ?a (Num ?n))")) do roots[#roots + 1] = s.n end
      assert.are.same({ 5 }, roots)
      assert.are.equal(3, #eg:search("(Mul ?a ?b)")) -- (* x 5), (* 5 x), (* 2 x)
      -- not extracted: the cheap Mul rows are (* 2 x) (kept) and (* x 2) (subsumed)
      local _, text = eg:extract(t, COST)
      assert.are.equal("(Mul (Num 2) (Var 1))", text)
      local _, text2 = eg:extract(other, COST)
      assert.are.equal("(Mul (Var 1) (Num 5))", text2)
    end)

    it("subsumes a term with eg:subsume and refuses rules it cannot subsume", function()
      local eg, MW = graph()
      local t = MW.add_term(eg, "(Mul (Var 2) (Num 3))")
      local v = eg:leaf("Var", 9)
      eg:union(t, v)
      assert.is_nil(eg:subsume("(Mul (Var 2) (Num 4))")) -- absent: nothing added
      local nodes = eg:size()
      assert.are.equal(eg:find(t), eg:subsume("(Mul (Var 2) (Num 3))"))
      assert.are.equal(nodes, (eg:size()))
      assert.are.same({}, eg:search("(Mul ?a ?b)"))
      assert.are.equal(eg:find(t), eg:lookup("(Mul (Var 2) (Num 3))"))
      local _, text = eg:extract(t, COST)
      assert.are.equal("(Var 9)", text)
      -- the mark survives a rebuild that moves rows, and a rule cannot match it
      eg:rule("comm-mul", "(Mul ?a ?b)", "(Mul ?b ?a)")
      MW.add_term(eg, "(Add (Num 1) (Num 1))")
      local rep = eg:run(T{ scheduler = vyre.egraph.simple() })
      assert.are.equal(0, rep[1].found["comm-mul"])
      for _, c in ipairs({
        { function() eg:rule("s1", { "(Mul ?a ?b)", "(Add ?a ?b)" }, "?a", { subsume = true }) end,
          "one left-hand pattern" },
        { function() eg:rule("s2", "(Mul ?a ?b)", "?a", { subsume = true,
          guard = function() return true end }) end, "without a Lua guard" },
        { function() eg:rule("s3", "(Mul ?a ?b)", "?a", { subsume = 1 }) end, "boolean" },
        { function() eg:subsume(3) end, "S-expression string" },
        { function() eg:subsume("(Mul ?a (Num 3))") end, "has variables" },
      }) do
        local err = H.error_of(c[1])
        assert.matches("vyre.EGraph:[a-z]+: ", err)
        assert.is_truthy(err:find(c[2], 1, true), err)
        assert.is_truthy(err:find("Fix: ", 1, true), err)
      end
    end)
  end)
end

for _, kind in ipairs(backends()) do
  describe("vyre.egraph v2 constant analysis on the " .. kind.name .. " backend" .. kind.tag,
    function()
    local be
    setup(function() be = kind.open() end)
    local AN = require("vyre.egraph.analysis")
    local MW = require("bench.eqsat.math")

    local function graph(modify)
      local eg = vyre.egraph(be)
      for _, o in ipairs({ { "Num", 0 }, { "Var", 0 }, { "Add", 2 }, { "Sub", 2 },
        { "Mul", 2 }, { "Neg", 1 }, { "Div", 2 } }) do eg:op(o[1], o[2]) end
      eg:analysis("const", { leaf = "Num", fold = { Add = "+", Sub = "-", Mul = "*",
        Neg = "neg" }, modify = modify })
      return eg
    end

    it("merges by a join: commutative, associative, idempotent, on random values",
      function()
      math.randomseed(87)
      local function rnd()
        local s = math.random(0, 2)
        return { s, s == 1 and math.random(-3, 3) or 0 }
      end
      for _ = 1, 2000 do
        local a, b, c = rnd(), rnd(), rnd()
        assert.are.same(AN.join(a, b), AN.join(b, a))
        assert.are.same(AN.join(AN.join(a, b), c), AN.join(a, AN.join(b, c)))
        assert.are.same(a, AN.join(a, a))
      end
      -- on the device: classes of random constants united at random give the join of
      -- their members' values (Lua's fold over any order)
      local eg = graph(false)
      local ids, vals = {}, {}
      for i = 1, 60 do
        vals[i] = math.random(-2, 2) * (1 << 33) + math.random(0, 1)
        ids[i] = eg:leaf("Num", vals[i])
      end
      local var = eg:leaf("Var", 1)
      for _ = 1, 45 do
        local a, b = math.random(1, 60), math.random(1, 60)
        eg:union(ids[a], ids[b])
      end
      eg:union(var, ids[1])
      eg:rebuild()
      local want = {}
      for i = 1, 60 do
        local r = eg:find(ids[i])
        want[r] = AN.join(want[r] or { 0, 0 }, { 1, vals[i] })
      end
      for root, w in pairs(want) do
        local v, state = eg:const(root)
        assert.are.equal(({ [0] = "none", "one", "conflict" })[w[1]], state)
        assert.are.equal(w[1] == 1 and w[2] or nil, v)
      end
      assert.are.same({ nil, "none" }, { eg:const(eg:add("Neg", var)) })
    end)

    it("folds constants and adds their e-nodes (egg's modify)", function()
      local eg = graph(true)
      local t = MW.add_term(eg, "(Add (Num 1) (Mul (Num 2) (Neg (Num 3))))")
      local x = MW.add_term(eg, "(Add (Var 1) (Num 2))")
      local rep = eg:run(T{ iterations = 1 }) -- no rules: the rebuild and modify
      assert.are.equal("saturated", rep.stop)
      assert.are.same({ -5, "one" }, { eg:const(t) })
      assert.are.same({ nil, "none" }, { eg:const(x) })
      assert.are.equal(eg:find(t), eg:lookup("(Num -5)"))
      assert.is_true(eg:equiv("(Neg (Num 3))", "(Num -3)"))
      assert.is_true(eg:equiv("(Mul (Num 2) (Num -3))", "(Num -6)"))
      local _, text = eg:extract(t, { Num = 1, Var = 1, Add = 1, Sub = 1, Mul = 1, Neg = 1,
        Div = 1 })
      assert.are.equal("(Num -5)", text)
      -- without modify the values are there but no e-node is added
      local eg2 = graph(false)
      local t2 = MW.add_term(eg2, "(Sub (Num 10) (Num 4))")
      eg2:rebuild()
      local nodes = eg2:size()
      assert.are.same({ 6, "one" }, { eg2:const(t2) })
      eg2:run(T{ iterations = 1 })
      assert.are.equal(nodes, (eg2:size()))
      assert.is_nil(eg2:lookup("(Num 6)"))
      -- two different constants in one class: conflict
      eg2:union(t2, eg2:leaf("Num", 7))
      assert.are.same({ nil, "conflict" }, { eg2:const(t2) })
    end)

    it("reads the analysis in `when` (egg's is_not_zero)", function()
      local eg = graph(true)
      eg:rule("div-self", "(Div ?a ?a)", "(Num 1)",
        { when = "(or (not (const? ?a)) (!= (const ?a) 0))" })
      local d1 = MW.add_term(eg, "(Div (Var 1) (Var 1))")
      local d0 = MW.add_term(eg, "(Div (Sub (Num 2) (Num 2)) (Sub (Num 2) (Num 2)))")
      local d3 = MW.add_term(eg, "(Div (Add (Num 1) (Num 2)) (Num 3))")
      local rep = eg:run(T{ scheduler = vyre.egraph.simple() })
      assert.are.equal("saturated", rep.stop)
      assert.is_true(eg:equiv(d1, "(Num 1)"))
      assert.is_false(eg:equiv(d0, "(Num 1)")) -- 0 / 0 stays
      assert.is_true(eg:equiv(d3, "(Num 1)")) -- (1 + 2) / 3: both sides fold to 3
      assert.are.equal(3, rep[1].found["div-self"])
      assert.are.equal(2, rep[1].matches["div-self"])
      for _, c in ipairs({
        { function() eg:analysis("free-vars", {}) end, "an analysis name must be" },
        { function() eg:analysis("const", { leaf = "Add" }) end, "has arity 2" },
        { function() eg:analysis("const", { leaf = "Num", fold = { Neg = "+" } }) end,
          "fold of 'Neg'" },
        { function() eg:analysis("const", { leaf = "Num", speed = 1 }) end, "unknown option" },
        { function() eg:rule("m", { "(Div ?a ?b)", "(Add ?a ?b)" }, "?a",
          { when = "(const? ?a)" }) end, "multi-pattern" },
        { function() eg:rule("p", "(Div ?a (Num ?n))", "?a", { when = "(const? ?n)" }) end,
          "needs an e-class variable" },
        { function() vyre.egraph(be):const(0) end, "has no analysis" },
      }) do
        local err = H.error_of(c[1])
        assert.matches("vyre.EGraph:[a-z]+: ", err)
        assert.is_truthy(err:find(c[2], 1, true), err)
        assert.is_truthy(err:find("Fix: ", 1, true), err)
      end
      local plain = vyre.egraph(be)
      plain:op("Div", 2)
      assert.is_truthy(H.error_of(function()
        plain:rule("d", "(Div ?a ?a)", "?a", { when = "(const? ?a)" })
      end):find("does not have", 1, true))
    end)

    it("ports egg's math_simplify_const with the constant analysis", function()
      -- egg: (+ 1 (- a (* (- 2 1) a))) => 1, with egg's math rules and constant folding
      local eg = vyre.egraph(be)
      for _, o in ipairs(MW.OPS) do eg:op(o[1], o[2]) end
      eg:analysis("const", { leaf = "Const", fold = { Add = "+", Sub = "-", Mul = "*" },
        modify = true })
      for _, r in ipairs(MW.RULES) do eg:rule(r[1], r[2], r[3]) end
      local t = MW.add_term(eg, "(Add (Const 1) (Sub (Var 1) (Mul (Sub (Const 2) (Const 1)) "
        .. "(Var 1))))")
      local rep = eg:run(T{ iterations = 10, time_limit = 120, until_ = { t, "(Const 1)" } })
      assert.are.equal("until", rep.stop)
      assert.is_true(eg:equiv(t, "(Const 1)"))
      assert.are.same({ 1, "one" }, { eg:const(t) })
    end)
  end)
end

for _, kind in ipairs(backends()) do
  describe("vyre.egraph v2 delete on the " .. kind.name .. " backend" .. kind.tag, function()
    local be
    setup(function() be = kind.open() end)

    it("deletes a term's e-node (egglog's delete), which rules may derive again", function()
      local eg = vyre.egraph(be)
      eg:op("Num", 0)
      eg:op("Add", 2)
      local MW = require("bench.eqsat.math")
      local t = MW.add_term(eg, "(Add (Num 1) (Num 2))")
      local u = MW.add_term(eg, "(Add (Num 2) (Num 1))")
      local w = MW.add_term(eg, "(Add (Add (Num 1) (Num 2)) (Num 3))")
      eg:rule("comm", "(Add ?a ?b)", "(Add ?b ?a)")
      eg:run(T{ scheduler = vyre.egraph.simple() })
      assert.is_true(eg:equiv(t, u))
      local nodes = eg:size()
      assert.is_nil(eg:delete("(Add (Num 5) (Num 1))")) -- absent: nothing changes
      assert.are.equal(eg:find(t), eg:delete("(Add (Num 1) (Num 2))"))
      assert.are.equal(nodes - 1, (eg:size()))
      assert.is_nil(eg:lookup("(Add (Num 1) (Num 2))"))
      assert.are.equal(eg:find(u), eg:lookup("(Add (Num 2) (Num 1))"))
      -- the term that had it as a child stays, in the class that stays
      assert.are.equal(eg:find(w), eg:lookup("(Add (Num 3) (Add (Num 2) (Num 1)))"))
      local found = {}
      for _, s in ipairs(eg:search("(Add (Num ?x) (Num ?y))")) do
        found[#found + 1] = s.x * 10 + s.y
      end
      assert.are.same({ 21 }, found)
      -- the next run searches every match again, so comm derives it again
      local rep = eg:run(T{ iterations = 2, scheduler = vyre.egraph.simple() })
      assert.are.equal(eg:find(u), eg:lookup("(Add (Num 1) (Num 2))"))
      assert.are.equal(nodes, (eg:size()))
      assert.are.equal("saturated", rep.stop)
      local err = H.error_of(function() eg:delete(7) end)
      assert.is_truthy(err:find("vyre.EGraph:delete: the term must be an S-expression", 1, true),
        err)
      assert.is_truthy(err:find("Fix: ", 1, true), err)
    end)
  end)
end
