-- 43: equality saturation on the reference backend (docs/EGRAPH.md, "Rules" and
-- "Equality saturation"): rules in S-expressions, e-matching on the device, apply and
-- rebuild per iteration. The e-graph after N iterations must hold the same partition of
-- terms as the pure-Lua oracle (spec/egraph_oracle.lua: its own naive matcher and apply)
-- with the same rules, with the same matches per rule; egg's math workload must give
-- egglog's e-node counts; extraction must give the expected simplifications; and every
-- misuse raises a worded error.
local vyre = require("vyre")
local H = require("spec.helpers")
local O = require("spec.egraph_oracle")
local MW = require("bench.eqsat.math")

local function new() return vyre.egraph(vyre.backend("reference")) end

-- An oracle with the e-graph's ops, and term adders by op name for both.
local function oracle_of(eg)
  local o = O.new()
  for _, op in ipairs(eg:ops()) do o:op(op.name, op.arity) end
  local byname = {}
  for i, op in ipairs(eg:ops()) do byname[op.name] = i - 1 end
  local w = {}
  function w.leaf(_, name, v) return o:leaf(byname[name], v) end
  function w.add(_, name, ...) return o:add(byname[name], { ... }) end
  return o, w
end

-- Builds the same terms in an e-graph and an oracle.
local function both(ops, rules, terms, opts)
  local eg = new()
  for _, op in ipairs(ops) do eg:op(op[1], op[2]) end
  for _, r in ipairs(rules) do eg:rule(r[1], r[2], r[3], r[4]) end
  local o, w = oracle_of(eg)
  local roots = {}
  for i, t in ipairs(terms) do
    roots[i] = MW.add_term(eg, t)
    assert.are.equal(roots[i], MW.add_term(w, t))
  end
  if opts and opts.unions then
    for _, u in ipairs(opts.unions) do
      eg:union(roots[u[1]], roots[u[2]])
      o:union(roots[u[1]], roots[u[2]])
    end
  end
  return eg, o, roots
end

-- Runs n iterations one at a time and checks sizes, matches and the partition after each.
-- The naive search (semi = nil) finds the oracle's matches; the semi-naive search finds
-- the new ones among them (at most as many) and must give the same e-graph. Returns the
-- summed matches of the e-graph and of the oracle.
local function check_iterations(eg, o, n, semi)
  local got, all = 0, 0
  for it = 1, n do
    local rep = eg:run({ iterations = 1, scheduler = vyre.egraph.simple(), node_limit = 1e9,
      time_limit = 1e9, semi_naive = semi or false })
    local orep = o:saturate(eg.rule_list, 1)[1]
    if semi then
      for name, m in pairs(orep.matches) do
        assert.is_true(rep[1].matches[name] <= m, name .. " at iteration " .. it)
        got, all = got + rep[1].matches[name], all + m
      end
    else
      assert.are.same(orep.matches, rep[1].matches, "matches at iteration " .. it)
    end
    assert.are.equal(orep.nodes, rep[1].nodes, "e-nodes at iteration " .. it)
    assert.are.equal(orep.classes, rep[1].classes, "e-classes at iteration " .. it)
    assert.is_nil(o:same_partition(eg), "partition at iteration " .. it)
  end
  return got, all
end

local FOLD_OPS = { { "Add", 2 }, { "Mul", 2 }, { "Sub", 2 }, { "Const", 0 }, { "Var", 0 } }
local FOLD = {
  { "fold-add", "(Add (Const ?x) (Const ?y))", "(Const (+ ?x ?y))" },
  { "fold-mul", "(Mul (Const ?x) (Const ?y))", "(Const (* ?x ?y))" },
  { "fold-sub", "(Sub (Const ?x) (Const ?y))", "(Const (- ?x ?y))" },
  { "comm-add", "(Add ?a ?b)", "(Add ?b ?a)" },
  { "zero-add", "(Add ?a (Const 0))", "?a" },
  { "one-mul", "(Mul ?a (Const 1))", "?a" },
}
local COST = { Add = 2, Mul = 2, Sub = 2, Const = 1, Var = 1, Diff = 5, Integral = 5,
  Div = 2, Pow = 2, Ln = 2, Sqrt = 2, Sin = 2, Cos = 2 }

-- A random graph of 200 e-nodes and its oracle, with rules for folding, device and Lua
-- guards and a multi-pattern join; with pick, a random subset of them (a random rule set).
local function random_graph(seed, pick)
  local eg = new()
  local choose = O.rng(seed + 100)
  local function rule(...)
    if not pick or choose(3) > 0 then eg:rule(...) end
  end
  for _, op in ipairs({ { "Add", 2 }, { "Mul", 2 }, { "Lt", 2 }, { "Neg", 1 },
    { "Const", 0 }, { "Var", 0 } }) do
    eg:op(op[1], op[2])
  end
  rule("fold-add", "(Add (Const ?x) (Const ?y))", "(Const (+ ?x ?y))")
  rule("fold-mul", "(Mul (Const ?x) (Const ?y))", "(Const (* ?x ?y))",
    { when = "(< ?x 5)" })
  rule("fold-neg", "(Neg (Const ?x))", "(Const (neg ?x))")
  rule("comm-add", "(Add ?a ?b)", "(Add ?b ?a)",
    { guard = function(v) return v.a < v.b end })
  rule("assoc-add", "(Add ?a (Add ?b ?c))", "(Add (Add ?a ?b) ?c)")
  rule("neg-neg", "(Neg (Neg ?a))", "?a")
  eg:rule("lt", { "(Lt ?a ?b)", "(Lt ?b ?c)" }, { { "(Lt ?a ?c)", "(Lt ?a ?b)" } })
  local o, w = oracle_of(eg)
  local rand = O.rng(seed)
  local plan = {}
  for i = 1, 30 do plan[i] = { rand(2) == 0 and "Const" or "Var", rand(7) - 3 } end
  for i = 31, 200 do
    local op = ({ "Add", "Mul", "Lt", "Neg" })[rand(4) + 1]
    plan[i] = { op, rand(i - 1), rand(i - 1) }
  end
  for _, g in ipairs({ eg, w }) do
    for i, p in ipairs(plan) do
      local id
      if i <= 30 then
        id = g:leaf(p[1], p[2])
      elseif p[1] == "Neg" then
        id = g:add(p[1], p[2])
      else
        id = g:add(p[1], p[2], p[3])
      end
      assert.are.equal(i - 1, id)
    end
  end
  return eg, o
end

describe("vyre.egraph equality saturation", function()
  it("gives egglog's e-node counts on egg's math workload, and the oracle's partition", function()
    local eg = new()
    MW.setup(eg)
    local o, w = oracle_of(eg)
    for _, t in ipairs(MW.TERMS) do MW.add_term(w, t) end
    -- egglog 14, bench/egraph/results/cpu-egglog.txt: steps 1..6
    local egglog = { 69, 118, 208, 389, 784, 1576 }
    check_iterations(eg, o, 4)
    local rep = eg:run({ iterations = 2, scheduler = vyre.egraph.simple(), node_limit = 1e9,
      time_limit = 1e9 })
    assert.are.equal(egglog[5], rep[1].nodes)
    assert.are.equal(egglog[6], rep[2].nodes)
    assert.are.equal("iterations", rep.stop)
    for _, r in ipairs(rep) do
      for _, k in ipairs({ "search_s", "apply_s", "rebuild_s", "seconds" }) do
        assert.is_true(r[k] >= 0)
      end
    end
  end)

  it("folds constants through payloads and extracts the folded term", function()
    local eg, o, roots = both(FOLD_OPS, FOLD, {
      "(Add (Const 2) (Mul (Const 3) (Const 4)))",
      "(Sub (Add (Var 1) (Const 0)) (Const -5))",
      "(Mul (Add (Const 0) (Var 1)) (Const 1))",
      "(Sub (Const -3) (Mul (Const 4611686018427387904) (Const 2)))",
    })
    check_iterations(eg, o, 4)
    local out = eg:extract(roots, COST)
    assert.are.equal("(Const 14)", out[1].text)
    assert.are.equal("(Sub (Var 1) (Const -5))", out[2].text)
    assert.are.equal("(Var 1)", out[3].text)
    -- 64-bit wrapping arithmetic, the same in Lua and on the device
    assert.are.equal(("(Const %d)"):format(-3 - 4611686018427387904 * 2), out[4].text)
  end)

  it("matches leaf roots, repeated payloads and literal payloads", function()
    local ops = { { "Pair", 2 }, { "Const", 0 }, { "Var", 0 } }
    local rules = {
      { "five", "(Const 5)", "(Var 5)" },
      { "same", "(Pair (Const ?x) (Const ?x))", "(Const (* ?x 10))" },
      { "big", "(Const ?x)", "(Pair (Const ?x) (Var 0))", { when = "(> ?x 40)" } },
    }
    local eg, o, roots = both(ops, rules, {
      "(Pair (Const 5) (Const 5))", "(Pair (Const 5) (Const 6))", "(Const -7)",
    })
    check_iterations(eg, o, 3)
    local out = eg:extract(roots, { Pair = 3, Const = 2, Var = 1 })
    assert.are.equal("(Const 50)", out[1].text)
    assert.are.equal("(Pair (Var 5) (Const 6))", out[2].text)
    assert.are.equal("(Const -7)", out[3].text)
  end)

  it("runs conditional rules: device predicates (when) and Lua guards", function()
    local ops = { { "Div", 2 }, { "Mul", 2 }, { "Const", 0 }, { "Var", 0 } }
    local rules = {
      { "div-self", "(Div (Const ?x) (Const ?y))", "(Const 1)",
        { when = "(and (== ?x ?y) (!= ?x 0))" } },
      { "mul-small", "(Mul ?a (Const ?k))", "(Mul (Const ?k) ?a)",
        { when = "(or (< ?k 3) (>= (* ?k 2) 100))" } },
      { "mul-distinct", "(Mul ?a ?b)", "(Mul ?b ?b)",
        { guard = function(s) return s.a ~= s.b end } },
    }
    local eg, o, roots = both(ops, rules, {
      "(Div (Const 4) (Const 4))", "(Div (Const 0) (Const 0))", "(Div (Const 3) (Const 4))",
      "(Mul (Var 1) (Const 2))", "(Mul (Var 1) (Const 7))", "(Mul (Var 2) (Const 50))",
    })
    check_iterations(eg, o, 3)
    local out = eg:extract(roots, { Div = 3, Mul = 2, Const = 1, Var = 1 })
    assert.are.equal("(Const 1)", out[1].text)
    assert.are.equal("(Div (Const 0) (Const 0))", out[2].text)
    assert.are.equal("(Div (Const 3) (Const 4))", out[3].text)
  end)

  it("runs multi-pattern rules joined on shared variables", function()
    local ops = { { "Lt", 2 }, { "Le", 2 }, { "Ne", 2 }, { "T", 0 }, { "Var", 0 } }
    local rules = {
      -- a < b and a <= b and a != b are facts in the e-class of T
      { "lt-le", { "(Le ?a ?b)", "(Ne ?a ?b)" }, "(Lt ?a ?b)" },
      { "lt-trans", { "(Lt ?a ?b)", "(Lt ?b ?c)" }, { { "(Lt ?a ?c)", "(Lt ?a ?b)" } } },
    }
    local eg, o = both(ops, rules, {
      "(T 1)", "(Le (Var 1) (Var 2))", "(Ne (Var 1) (Var 2))", "(Lt (Var 2) (Var 3))",
      "(Lt (Var 3) (Var 4))", "(Le (Var 4) (Var 5))",
    }, { unions = { { 1, 2 }, { 1, 3 }, { 1, 4 }, { 1, 5 }, { 1, 6 } } })
    check_iterations(eg, o, 3)
    local n = 0
    for _, c in ipairs(eg:classes()) do
      for _, nd in ipairs(eg:nodes(c)) do if nd.op == "Lt" then n = n + 1 end end
    end
    assert.are.equal(6, n) -- 1<2 2<3 3<4 and 1<3 2<4 1<4
  end)

  it("matches the oracle on random graphs with folding, guards and joins", function()
    for seed = 1, 3 do
      local eg, o = random_graph(seed)
      check_iterations(eg, o, 3)
    end
  end)

  it("gives the naive search's e-graph with the semi-naive search, iteration by iteration",
    function()
    -- egg's math workload: the oracle (naive) partition and sizes after each iteration
    local eg = new()
    MW.setup(eg)
    local o, w = oracle_of(eg)
    for _, t in ipairs(MW.TERMS) do MW.add_term(w, t) end
    local got, all = check_iterations(eg, o, 5, true)
    assert.is_true(got < all, ("new matches %d of %d"):format(got, all))
    -- random graphs and rule sets: folding, device and Lua guards, multi-pattern joins
    for seed = 1, 3 do
      local eg2, o2 = random_graph(seed, true)
      got, all = check_iterations(eg2, o2, 4, true)
      assert.is_true(got < all, ("seed %d: new matches %d of %d"):format(seed, got, all))
    end
    -- semi-naive against naive directly, with the backoff scheduler (it sees all matches,
    -- so it bans the same rules), over two runs with terms and a union added between
    local a, b = new(), new()
    local sizes = {}
    for k, g in ipairs({ a, b }) do
      MW.setup(g)
      local rep = g:run({ iterations = 3, semi_naive = k == 1,
        scheduler = vyre.egraph.backoff({ match_limit = 40, ban_length = 1 }) })
      local x = MW.add_term(g, "(Add (Mul (Var 7) (Const 1)) (Const 0))")
      g:union(x, MW.add_term(g, "(Var 8)"))
      local rep2 = g:run({ iterations = 3, semi_naive = k == 1,
        scheduler = vyre.egraph.backoff({ match_limit = 40, ban_length = 1 }) })
      sizes[k] = {}
      for _, r in ipairs(rep) do sizes[k][#sizes[k] + 1] = { r.nodes, r.classes } end
      for _, r in ipairs(rep2) do sizes[k][#sizes[k] + 1] = { r.nodes, r.classes } end
    end
    assert.are.same(sizes[2], sizes[1])
    assert.are.same({ b:size() }, { a:size() })
  end)

  it("extracts the math workload's simplifications", function()
    local eg = new()
    for _, op in ipairs(MW.OPS) do eg:op(op[1], op[2]) end
    for _, r in ipairs(MW.RULES) do eg:rule(r[1], r[2], r[3]) end
    local cases = {
      { "(Diff (Var 1) (Sin (Var 1)))", "(Cos (Var 1))" },
      { "(Integral (Const 1) (Var 1))", "(Var 1)" },
      { "(Pow (Var 2) (Const 1))", "(Var 2)" },
      { "(Sub (Var 2) (Var 2))", "(Const 0)" },
      { "(Mul (Add (Var 1) (Const 0)) (Const 1))", "(Var 1)" },
      { "(Integral (Cos (Var 1)) (Var 1))", "(Sin (Var 1))" },
      { "(Add (Mul (Var 1) (Var 2)) (Mul (Var 1) (Var 3)))",
        "(Mul (Var 1) (Add (Var 2) (Var 3)))" },
    }
    local roots = {}
    for i, c in ipairs(cases) do roots[i] = MW.add_term(eg, c[1]) end
    local rep = eg:run({ iterations = 4, scheduler = vyre.egraph.simple() })
    assert.are.equal(4, #rep)
    local out = eg:extract(roots, COST)
    for i, c in ipairs(cases) do assert.are.equal(c[2], out[i].text, c[1]) end
  end)

  it("stops on saturation, node_limit and iterations, and reports each iteration", function()
    local eg, o = both(FOLD_OPS, { FOLD[1], FOLD[2] },
      { "(Add (Const 1) (Mul (Const 2) (Const 3)))" })
    local rep = eg:run({ iterations = 10, scheduler = vyre.egraph.simple() })
    assert.are.equal("saturated", rep.stop)
    assert.are.equal(3, #rep)
    assert.are.same({ ["fold-add"] = 0, ["fold-mul"] = 1 }, rep[1].matches)
    -- semi-naive (the default): iteration 2 reports only new matches; fold-mul's one
    -- match was applied at iteration 1
    assert.are.same({ ["fold-add"] = 1, ["fold-mul"] = 0 }, rep[2].matches)
    assert.are.equal(5, rep.start.nodes)
    o:saturate(eg.rule_list, 3)
    assert.is_nil(o:same_partition(eg))
    local eg2 = new()
    MW.setup(eg2)
    rep = eg2:run({ iterations = 20, node_limit = 300, scheduler = vyre.egraph.simple() })
    -- the iteration that passed the limit is rolled back (spec 87): 302 e-nodes after
    -- a rule's apply and a rebuild
    assert.are.equal("node_limit", rep.stop)
    assert.are.same({ reason = "node_limit", phase = "apply", nodes = 302 },
      rep[#rep].rolled_back)
    assert.are.equal(rep[#rep - 1].nodes, rep[#rep].nodes)
    assert.are.equal(rep[#rep].nodes, (eg2:size()))
    rep = eg2:run({ iterations = 0 })
    assert.are.equal(0, #rep)
  end)

  it("uses egg's backoff scheduler by default and takes a Lua scheduler", function()
    local eg = new()
    MW.setup(eg)
    -- a small match limit bans the commutativity rules early; banned rules are skipped
    local rep = eg:run({ iterations = 4, scheduler = vyre.egraph.backoff({ match_limit = 5,
      ban_length = 3 }) })
    assert.are.equal(7, rep[1].found["comm-add"]) -- found, then dropped: none applied
    assert.are.equal(0, rep[1].matches["comm-add"])
    assert.is_nil(rep[2].matches["comm-add"]) -- banned at 1 until 4 (egg: it < banned_until)
    assert.is_nil(rep[3].matches["comm-add"])
    assert.is_number(rep[4].matches["comm-add"])
    local calls = {}
    local eg2 = new()
    MW.setup(eg2)
    rep = eg2:run({ iterations = 2, scheduler = function(it, name, m)
      calls[#calls + 1] = { it, name, m }
      return name ~= "comm-mul"
    end })
    assert.is_nil(rep[1].matches["comm-mul"])
    assert.are.same({ 1, "comm-add" }, calls[1])
    assert.are.same({ 1, "comm-add", 7 }, calls[2])
    local eg3 = new()
    MW.setup(eg3)
    rep = eg3:run({ iterations = 2 }) -- default: backoff with egg's limits (1000, 5)
    assert.are.equal(118, rep[2].nodes)
  end)

  it("raises worded errors for bad rules and run options", function()
    local eg = new()
    eg:op("Add", 2)
    eg:op("Const", 0)
    local cases = {
      { function() eg:rule("r", "(Add ?a", "?a") end, "a ')' is missing" },
      { function() eg:rule("r", "(Add ?a ?b))", "?a") end, "text after the pattern" },
      { function() eg:rule("r", "(Sub ?a ?b)", "?a") end, "unknown op 'Sub'" },
      { function() eg:rule("r", "(Add ?a)", "?a") end, "'Add' takes 2 children, got 1" },
      { function() eg:rule("r", "(Add ?a ?b)", "?c") end, "uses ?c, which no left-hand" },
      { function() eg:rule("r", { "?a", "(Add ?a ?b)" }, "?a") end, "is a bare variable" },
      { function() eg:rule("r", "(Add ?a (Const ?a))", "?a") end, "both as an e-class" },
      { function() eg:rule("r", "(Add ?a ?b)", "(Const (+ ?a 1))") end, "payload variable ?a" },
      { function() eg:rule("r", "(Add (Const ?x) ?b)", "(Const (/ ?x 2))") end, "payload must be" },
      { function() eg:rule("r", "(Add ?a ?b)", "?a", { when = "(foo ?a)" }) end,
        "not a predicate" },
      { function() eg:rule("r", "(Add ?a ?b)", "?a", { when = "(== ?z 1)" }) end, "?z" },
      { function() eg:rule("r", "(Add ?a ?b)", "?a", { guard = 3 }) end, "opts.guard" },
      { function() eg:rule("r", "(Add ?a ?b)", "?a", { speed = 3 }) end, "unknown option 'speed'" },
      { function() eg:rule("r", "(Add ?a ?b)", 7) end, "argument 3 (rhs)" },
      { function() eg:rule("", "(Add ?a ?b)", "?a") end, "argument 1 (name)" },
      { function() eg:rule("r", "", "?a") end, "an empty pattern" },
    }
    for _, c in ipairs(cases) do
      local err = H.error_of(c[1])
      assert.matches("vyre.EGraph:r[ua][ln][e]?", err)
      assert.is_truthy(err:find(c[2], 1, true), err)
      assert.is_truthy(err:find("Fix: ", 1, true), err)
    end
    eg:rule("r", "(Add ?a ?b)", "(Add ?b ?a)")
    local err = H.error_of(function() eg:rule("r", "(Add ?a ?b)", "?a") end)
    assert.is_truthy(err:find("exists already", 1, true), err)
    for _, c in ipairs({
      { { iterations = -1 }, "non-negative" }, { { node_limit = "x" }, "must be numbers" },
      { { scheduler = 5 }, "scheduler must be a function" }, { { fast = true }, "unknown option" },
      { { semi_naive = 1 }, "semi_naive must be a boolean" },
    }) do
      err = H.error_of(function() eg:run(c[1]) end)
      assert.is_truthy(err:find(c[2], 1, true), err)
    end
    assert.is_truthy(H.error_of(function() eg:run(5) end):find("table of options", 1, true))
  end)
end)
