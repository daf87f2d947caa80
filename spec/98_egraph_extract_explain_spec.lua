-- 98: e-graphs v2, issue 25 §4 and §5 (docs/EGRAPH.md, "Cost functions", "DAG
-- extraction", "Proofs"). Cost expressions on the device against a Lua model of the
-- same function; DAG extraction: exact <= greedy <= tree on random small e-graphs, exact
-- equal to brute force on tiny ones, the returned term's DAG cost recounted; proofs of
-- the math and prop workloads replayed step by step (each step's after-term is the
-- before-term rewritten once by the named rule at the named position), and explanations
-- leaving the e-graph as it is without them. Each case runs on the reference backend,
-- on the fake CUDA driver (#fakecuda, scripts/test.sh's fake pass) and, on a GPU, #gpu.
local vyre = require("vyre")
local H = require("spec.helpers")
local MW = require("bench.eqsat.math")

local backends = H.three_backends -- reference, fake driver, GPU

local PR = require("spec.egraph_proofs") -- the reader, matcher and replay (98, 110)

-- Checks a proof of t1 = t2 step by step (PR.check); returns the number of steps.
local function check_proof(proof, t1, t2, rules)
  local n, why = PR.check(proof, t1, t2, rules)
  assert.is_truthy(n, why)
  return n
end

-- The prop workload: egg's tests/prop.rs rules in vyre's syntax. double_neg_flip (a bare
-- variable left-hand side) cannot be written, so the goals are added before the run and
-- double_neg joins their (Not (Not y)) to y.
local PROP_OPS = { { "And", 2 }, { "Or", 2 }, { "Not", 1 }, { "Implies", 2 }, { "Bool", 0 },
  { "Sym", 0 } }
local PROP_RULES = {
  { "def_imply", "(Implies ?a ?b)", "(Or (Not ?a) ?b)" },
  { "def_imply_flip", "(Or (Not ?a) ?b)", "(Implies ?a ?b)" },
  { "double_neg", "(Not (Not ?a))", "?a" },
  { "assoc_or", "(Or ?a (Or ?b ?c))", "(Or (Or ?a ?b) ?c)" },
  { "dist_and_or", "(And ?a (Or ?b ?c))", "(Or (And ?a ?b) (And ?a ?c))" },
  { "dist_or_and", "(Or ?a (And ?b ?c))", "(And (Or ?a ?b) (Or ?a ?c))" },
  { "comm_or", "(Or ?a ?b)", "(Or ?b ?a)" },
  { "comm_and", "(And ?a ?b)", "(And ?b ?a)" },
  { "lem", "(Or ?a (Not ?a))", "(Bool 1)" },
  { "or_true", "(Or ?a (Bool 1))", "(Bool 1)" },
  { "and_true", "(And ?a (Bool 1))", "?a" },
  { "contrapositive", "(Implies ?a ?b)", "(Implies (Not ?b) (Not ?a))" },
  { "lem_imply", "(And (Implies ?a ?b) (Implies (Not ?a) ?c))", "(Or ?b ?c)" },
}

local by_name = PR.by_name
local read, show, at, replace, replay = PR.read, PR.show, PR.at, PR.replace, PR.replay

-- Random small e-graphs ------------------------------------------------------------------

-- n random e-nodes over leaves (L 0..3), F/1, G/2, H/2, then u random unions; returns the
-- e-graph and the last id (a root that has a finite term: every class keeps a row whose
-- children were added before it).
local function random_graph(be, seed, n, u)
  math.randomseed(seed)
  local eg = vyre.egraph(be)
  eg:op("L", 0)
  eg:op("F", 1)
  eg:op("G", 2)
  eg:op("H", 2)
  local ids = {}
  for _ = 1, 3 do ids[#ids + 1] = eg:leaf("L", math.random(0, 3)) end
  for _ = 1, n do
    local k = math.random(1, 4)
    local function pick() return ids[math.random(1, #ids)] end
    if k == 1 then ids[#ids + 1] = eg:leaf("L", math.random(0, 3))
    elseif k == 2 then ids[#ids + 1] = eg:add("F", pick())
    elseif k == 3 then ids[#ids + 1] = eg:add("G", pick(), pick())
    else ids[#ids + 1] = eg:add("H", pick(), pick()) end
  end
  for _ = 1, u do eg:union(ids[math.random(1, #ids)], ids[math.random(1, #ids)]) end
  eg:rebuild()
  return eg, ids[#ids]
end

-- The least DAG cost by enumerating every choice of e-node for every class reachable
-- from root (any e-node), rejecting cyclic choices.
local function brute_force(eg, root, cost)
  local classes, nodes, seen = {}, {}, {}
  local stack = { eg:find(root) }
  seen[stack[1]] = true
  while #stack > 0 do
    local c = table.remove(stack)
    classes[#classes + 1] = c
    nodes[c] = eg:nodes(c)
    for _, nd in ipairs(nodes[c]) do
      for _, ch in ipairs(nd) do
        local cc = eg:find(ch)
        if not seen[cc] then seen[cc] = true stack[#stack + 1] = cc end
      end
    end
  end
  local product = 1
  for _, c in ipairs(classes) do product = product * #nodes[c] end
  if product > 200000 then return nil, product end
  local choice, best, count = {}, math.huge, 0
  local function evaluate()
    count = count + 1
    local state, total = {}, 0
    local function visit(c)
      if state[c] == 2 then return true end
      if state[c] == 1 then return false end
      state[c] = 1
      local nd = nodes[c][choice[c]]
      total = total + cost[nd.op]
      for _, ch in ipairs(nd) do
        if not visit(eg:find(ch)) then return false end
      end
      state[c] = 2
      return true
    end
    if visit(eg:find(root)) and total < best then best = total end
  end
  local function enum(i)
    if i > #classes then return evaluate() end
    for k = 1, #nodes[classes[i]] do
      choice[classes[i]] = k
      enum(i + 1)
    end
  end
  enum(1)
  return best, count
end

-- The DAG cost of a term tree: every distinct sub-term (by text) once.
local function term_dag_cost(term, cost)
  local seen, total = {}, 0
  local function text(t)
    if t.payload then return ("(%s %d)"):format(t.op, t.payload) end
    local parts = { "(" .. t.op }
    for k = 1, #t do parts[#parts + 1] = text(t[k]) end
    return table.concat(parts, " ") .. ")"
  end
  local function visit(t)
    local s = text(t)
    if seen[s] then return end
    seen[s] = true
    total = total + cost[t.op]
    for k = 1, #t do visit(t[k]) end
  end
  visit(term)
  return total
end

-- A Lua model of cost expressions' tree extraction: Bellman-Ford over classes with fn(nd,
-- child costs) for every e-node; returns the root's cost.
local function model_cost(eg, root, fn)
  local cls = eg:classes()
  local cost, changed = {}, true
  while changed do
    changed = false
    for _, c in ipairs(cls) do
      for _, nd in ipairs(eg:nodes(c)) do
        local cc, ok = {}, true
        for k, ch in ipairs(nd) do
          cc[k] = cost[eg:find(ch)]
          if not cc[k] then ok = false end
        end
        if ok then
          local v = fn(nd, cc)
          if not cost[c] or v < cost[c] then cost[c] = v changed = true end
        end
      end
    end
  end
  return cost[eg:find(root)]
end

for _, kind in ipairs(backends()) do
  describe("vyre.egraph extraction and explanations on the " .. kind.name .. " backend"
    .. kind.tag, function()
    local be
    setup(function() be = kind.open() end)

    -- §4: cost functions --------------------------------------------------------------

    it("gives cost expressions the op-table results where they say the same", function()
      for seed = 1, 6 do
        local eg, root = random_graph(be, 9800 + seed, 14, 4)
        local t1, x1, c1 = eg:extract(root, { L = 2, F = 1, G = 3, H = 1 })
        local t2, x2, c2 = eg:extract(root, { L = "(+ 2 sum)", F = 1, G = "(+ c1 c2 3)",
          H = "(+ 1 sum)" })
        assert.are.equal(c1, c2)
        assert.are.equal(x1, x2)
        assert.are.same(t1, t2)
      end
    end)

    it("computes depth, payload and child-weighted costs as the Lua model does", function()
      local cases = {
        { "(+ 1 max)", function(_, cc)
          local m = 0
          for _, v in ipairs(cc) do m = math.max(m, v) end
          return 1 + m
        end },
        { { L = "(if (< payload 2) 1 (+ 5 (abs payload)))", F = "(+ c1 7)",
          G = "(+ 1 c1 (* 3 c2))", H = "(+ (max c1 c2) (min c1 c2) 2)" }, function(nd, cc)
          if nd.op == "L" then return nd.payload < 2 and 1 or 5 + math.abs(nd.payload) end
          if nd.op == "F" then return cc[1] + 7 end
          if nd.op == "G" then return 1 + cc[1] + 3 * cc[2] end
          return math.max(cc[1], cc[2]) + math.min(cc[1], cc[2]) + 2
        end },
        { "(if (== arity 0) 3 (+ sum arity))", function(nd, cc)
          if nd.op == "L" then return 3 end
          local s = 0
          for _, v in ipairs(cc) do s = s + v end
          return s + #cc
        end },
      }
      for seed = 1, 5 do
        local eg, root = random_graph(be, 9900 + seed, 16, 5)
        for i, cs in ipairs(cases) do
          local term, _, cost = eg:extract(root, cs[1])
          assert.are.equal(model_cost(eg, root, cs[2]), cost, "case " .. i .. " seed " .. seed)
          -- the term's own cost under the model equals the class cost
          local function tc(t)
            local cc = {}
            for k = 1, #t do cc[k] = tc(t[k]) end
            return cs[2](t, cc)
          end
          assert.are.equal(cost, tc(term), "case " .. i)
        end
      end
    end)

    it("ports egg's AstDepth against AstSize on a math simplification", function()
      local eg = vyre.egraph(be)
      for _, o in ipairs(MW.OPS) do eg:op(o[1], o[2]) end
      eg:rule("assoc-add", "(Add ?a (Add ?b ?c))", "(Add (Add ?a ?b) ?c)")
      eg:rule("assoc-add-r", "(Add (Add ?a ?b) ?c)", "(Add ?a (Add ?b ?c))")
      local root = MW.add_term(eg,
        "(Add (Var 1) (Add (Var 2) (Add (Var 3) (Add (Var 4) (Var 5)))))")
      eg:run{ iterations = 6, time_limit = 600 }
      local size = {}
      for _, o in ipairs(MW.OPS) do size[o[1]] = 1 end
      local _, _, c_size = eg:extract(root, size)
      local _, text, c_depth = eg:extract(root, "(+ 1 max)")
      assert.are.equal(9, c_size)      -- 4 Add + 5 Var whatever the shape
      assert.are.equal(4, c_depth)     -- balanced, e.g. ((1 2) (3 (4 5)))
      assert.is_true(eg:equiv(root, text))
      local depth = 0
      for _ in text:gmatch("%(Add") do depth = depth + 1 end
      assert.are.equal(4, depth)       -- still 4 Adds, only fewer nested
    end)

    it("refuses bad cost expressions with a Fix", function()
      local eg, root = random_graph(be, 9990, 8, 1)
      local function err(cost, pat, opts)
        local ok, e = pcall(eg.extract, eg, root, cost, opts)
        assert.is_false(ok)
        assert.matches("vyre.EGraph:extract: ", tostring(e), 1, true)
        assert.matches(pat, tostring(e))
        assert.matches("Fix: ", tostring(e), 1, true)
      end
      err("(+ 1 c2)", "names child 2, but the op has 0 children")
      err("(+ 1 foo)", "'foo' is not a name")
      err("(frob 1)", "not a function of cost expressions")
      err("(if 1 2 3)", "is a number where a test is needed")
      err({ L = 1, F = "(+ 1 sum)", G = 1 }, "op 'H' has no cost")
      err("(- sum 5)", "outside %[1, 2%^62%]")
      err("(+ 1 sum)", "DAG extraction needs a cost per op", { dag = true })
      err({ L = 1, F = 1, G = 1, H = 1 }, "unknown option 'tree'", { tree = true })
      err({ L = 1, F = 1, G = 1, H = 1 }, "opts.budget must be", { dag = true, budget = -1 })
      -- G's cost is its larger child's: (G (L 1) (L 2)) costs no more than (L 2)
      local g = vyre.egraph(be)
      g:op("L", 0)
      g:op("G", 2)
      local top = g:add("G", g:leaf("L", 1), g:leaf("L", 2))
      local ok, e = pcall(g.extract, g, top, { L = "(+ 1 payload)", G = "(max c1 c2)" })
      assert.is_false(ok)
      assert.matches("not greater than a child's.*Fix: make each e%-node's cost exceed",
        tostring(e))
    end)

    -- §4: DAG extraction ----------------------------------------------------------------

    it("finds the shared sub-term a tree extraction misses", function()
      -- s = (L 1), x = (L 9) = (F s), root (H x (G s s)): the tree picks (L 9) for x
      -- (3 < 1 + 3), but with s paid for once by G, (F s) adds only 1.
      local eg = vyre.egraph(be)
      eg:op("L", 0)
      eg:op("F", 1)
      eg:op("G", 2)
      eg:op("H", 2)
      local s = eg:leaf("L", 1)
      local x = eg:leaf("L", 9)
      local fx = eg:add("F", s)
      eg:union(x, fx)
      local y = eg:add("G", s, s)
      local root = eg:add("H", x, y)
      local cost = { L = 3, F = 1, G = 1, H = 1 }
      local _, _, tree = eg:extract(root, cost)
      assert.are.equal(1 + 3 + (1 + 3 + 3), tree)
      local term, text, dcost, rep = eg:extract(root, cost, { dag = true })
      assert.are.equal("(H (F (L 1)) (G (L 1) (L 1)))", text)
      assert.are.equal(1 + 1 + 1 + 3, dcost)
      assert.are.equal(dcost, term_dag_cost(term, cost))
      assert.are.equal(tree, rep.tree)
      assert.are.equal(1 + 3 + 1 + 3, rep.tree_dag)   -- H, L 9, G, L 1
      assert.are.equal(6, rep.exact)
      assert.is_true(rep.greedy <= rep.tree_dag)
      assert.are.equal("exact", rep.method)
      assert.is_true(rep.optimal)
    end)

    it("keeps exact <= greedy <= tree on random small e-graphs, exact = brute force",
      function()
      local cost = { L = 2, F = 1, G = 1, H = 3 }
      local strict, brute = 0, 0
      for seed = 1, 25 do
        local eg, root = random_graph(be, 9700 + seed, 9 + seed % 5, 2 + seed % 4)
        local term, _, dcost, rep = eg:extract(root, cost, { dag = true })
        local _, _, tree = eg:extract(root, cost)
        assert.are.equal(tree, rep.tree)
        assert.is_true(rep.optimal, "seed " .. seed)
        assert.is_true(rep.exact <= rep.greedy, "seed " .. seed)
        assert.is_true(rep.greedy <= rep.tree_dag, "seed " .. seed)
        assert.is_true(rep.tree_dag <= rep.tree, "seed " .. seed)
        assert.are.equal(rep.exact, dcost)
        assert.are.equal(dcost, term_dag_cost(term, cost), "seed " .. seed)
        if rep.exact < rep.tree then strict = strict + 1 end
        local bf = brute_force(eg, root, cost)
        if bf then
          assert.are.equal(bf, rep.exact, "seed " .. seed)
          brute = brute + 1
        end
        -- the greedy result alone (exact_limit 0) is a valid DAG of the greedy cost
        local gterm, _, gcost, grep = eg:extract(root, cost, { dag = true, exact_limit = 0 })
        assert.are.equal("greedy", grep.method)
        assert.are.equal(rep.greedy, gcost)
        assert.are.equal(gcost, term_dag_cost(gterm, cost))
        assert.is_nil(grep.exact)
      end
      assert.is_true(strict > 0, "no random graph had sharing to gain")
      assert.is_true(brute >= 15, "too few graphs small enough for brute force: " .. brute)
    end)

    it("extracts several roots as one DAG and says when the search budget ran out",
      function()
      local eg, root = random_graph(be, 9601, 30, 6)
      local cost = { L = 2, F = 1, G = 1, H = 3 }
      local ids = { root, root - 1, root - 2 }
      local out = eg:extract(ids, cost, { dag = true })
      assert.are.equal(3, #out)
      assert.is_true(out.dag.optimal)
      assert.is_true(out.dag.dag <= out.dag.tree)
      for i = 1, 3 do
        assert.are.equal(out[i].cost, term_dag_cost(out[i].term, cost))
        assert.is_true(eg:equiv(ids[i], out[i].text))
      end
      local _, _, c, rep = eg:extract(root, cost, { dag = true, budget = 1 })
      assert.are.equal("exact", rep.method)
      assert.is_false(rep.optimal)
      assert.is_nil(rep.exact)
      assert.is_true(c <= rep.greedy)
    end)

    it("proves a DAG of about 10^3 classes optimal within the search budget", function()
      -- a chain of 990 F, every 7th class also (G x (L 1)): each needs one e-node, and the
      -- mandatory closure makes the bound at the root already the greedy's cost
      local eg = vyre.egraph(be)
      eg:op("L", 0)
      eg:op("F", 1)
      eg:op("G", 2)
      local x = eg:leaf("L", 0)
      local alt = eg:leaf("L", 1)
      for i = 1, 990 do
        local y = eg:add("F", x)
        if i % 7 == 0 then eg:union(y, eg:add("G", x, alt)) end
        x = y
      end
      local _, _, c, rep = eg:extract(x, { L = 1, F = 1, G = 1 }, { dag = true })
      assert.are.equal(992, rep.classes)
      assert.are.equal("exact", rep.method)
      assert.is_true(rep.optimal)
      assert.are.equal(991, c)
      assert.is_true(rep.nodes < 100)
    end)

    -- §5: explanations ------------------------------------------------------------------

    it("leaves the math workload's e-graph as it is without explanations", function()
      local sizes = {}
      for _, ex in ipairs({ false, true }) do
        local eg = vyre.egraph(be, { explanations = ex })
        MW.setup(eg)
        local s = {}
        for _ = 1, 4 do
          local rep = eg:run{ iterations = 1, scheduler = vyre.egraph.simple(),
            time_limit = 600 }
          s[#s + 1] = ("%d/%d"):format(rep[1].nodes, rep[1].classes)
        end
        sizes[#sizes + 1] = table.concat(s, " ")
      end
      assert.are.equal(sizes[1], sizes[2])
    end)

    it("proves the math workload's equalities, every step replayed", function()
      local eg = vyre.egraph(be, { explanations = true })
      local roots = MW.setup(eg)
      eg:run{ iterations = 4, scheduler = vyre.egraph.simple(), time_limit = 600 }
      local rules = by_name(MW.RULES)
      -- the start terms against their cheapest forms when Sub is dear
      local cost = {}
      for _, o in ipairs(MW.OPS) do cost[o[1]] = 1 end
      cost.Sub = 9
      local out = eg:extract(roots, cost)
      local steps, changed = 0, 0
      for i, r in ipairs(out) do
        local proof = eg:explain(MW.TERMS[i], r.text)
        steps = steps + check_proof(proof, MW.TERMS[i], r.text, rules)
        if #proof > 0 then changed = changed + 1 end
      end
      assert.is_true(changed >= 3, "too few start terms changed: " .. changed)
      -- pairs of terms (by id) of one class, in both directions
      local cols, counts = eg:buffers()
      local parent = cols.parent:download({ count = counts.ids })
      local byclass, classes = {}, {}
      for id = 0, counts.ids - 1 do
        local c = parent[id + 1]
        if not byclass[c] then byclass[c] = {} classes[#classes + 1] = c end
        local l = byclass[c]
        l[#l + 1] = id
      end
      math.randomseed(98)
      local tried = 0
      for _, c in ipairs(classes) do
        local l = byclass[c]
        if #l >= 2 and tried < 60 then
          local a, b = l[math.random(1, #l)], l[math.random(1, #l)]
          for _, pr in ipairs({ { a, b }, { b, a } }) do
            local p = eg:explain(pr[1], pr[2])
            if #p > 0 then
              check_proof(p, p[1].before, p[#p].after, rules)
              tried = tried + 1
            end
          end
        end
      end
      assert.is_true(tried >= 10, "too few pairs in one class: " .. tried)
      assert.is_true(steps > 0)
    end)

    it("proves egg's prop contrapositive and chain goals, every step replayed", function()
      local rules = by_name(PROP_RULES)
      local cases = {
        { "(Implies (Sym 1) (Sym 2))", { "(Or (Not (Sym 1)) (Sym 2))",
          "(Or (Not (Sym 1)) (Not (Not (Sym 2))))", "(Or (Not (Not (Sym 2))) (Not (Sym 1)))",
          "(Implies (Not (Sym 2)) (Not (Sym 1)))" },
          { "def_imply", "def_imply_flip", "double_neg", "comm_or" } },
        { "(And (Implies (Sym 1) (Sym 2)) (Implies (Sym 2) (Sym 3)))", {
          "(And (Implies (Not (Sym 2)) (Not (Sym 1))) (Implies (Sym 2) (Sym 3)))",
          "(And (Implies (Sym 2) (Sym 3)) (Implies (Not (Sym 2)) (Not (Sym 1))))",
          "(Or (Sym 3) (Not (Sym 1)))", "(Or (Not (Sym 1)) (Sym 3))",
          "(Implies (Sym 1) (Sym 3))" },
          { "def_imply", "def_imply_flip", "double_neg", "comm_or", "comm_and", "lem_imply" } },
      }
      for ci, case in ipairs(cases) do
        local eg = vyre.egraph(be, { explanations = true })
        for _, o in ipairs(PROP_OPS) do eg:op(o[1], o[2]) end
        for _, name in ipairs(case[3]) do
          local r = rules[name]
          eg:rule(r[1], r[2], r[3])
        end
        MW.add_term(eg, case[1])
        for _, g in ipairs(case[2]) do MW.add_term(eg, g) end
        eg:run{ iterations = 20, node_limit = 5000, time_limit = 600 }
        for gi, g in ipairs(case[2]) do
          assert.is_true(eg:equiv(case[1], g), ("case %d goal %d"):format(ci, gi))
          local proof = eg:explain(case[1], g)
          assert.is_true(#proof > 0)
          check_proof(proof, case[1], g, rules)
          check_proof(eg:explain(g, case[1]), g, case[1], rules)
        end
      end
    end)

    it("explains user unions and their congruences, and adds missing terms", function()
      local eg = vyre.egraph(be, { explanations = true })
      eg:op("F", 1)
      eg:op("G", 2)
      eg:op("N", 0)
      local a, b, c = eg:leaf("N", 1), eg:leaf("N", 2), eg:leaf("N", 3)
      local fa = eg:add("F", a)
      eg:add("G", fa, c)
      eg:union(a, b)
      eg:union_many({ b, c })
      -- (F (N 2)) and (G (F (N 3)) (N 1)) were never added: explain adds them
      local p = eg:explain("(G (F (N 1)) (N 3))", "(G (F (N 3)) (N 1))")
      for i, st in ipairs(p) do
        assert.are.equal("union", st.rule)
        if i > 1 then assert.are.equal(p[i - 1].after, st.before) end
      end
      assert.are.equal("(G (F (N 1)) (N 3))", p[1].before)
      assert.are.equal("(G (F (N 3)) (N 1))", p[#p].after)
      for _, st in ipairs(p) do
        -- one leaf replaced at the named position
        local bt, at_ = read(st.before), read(st.after)
        assert.are.equal(show(replace(bt, st.at, 1, at(at_, st.at))), show(at_))
      end
      assert.are.same({}, eg:explain(fa, fa))
      local ok, e = pcall(eg.explain, eg, "(F (N 1))", "(G (N 1) (N 1))")
      assert.is_false(ok)
      assert.matches("vyre.EGraph:explain: the two terms are not equal.*Fix: ", tostring(e))
      local plain = vyre.egraph(be)
      plain:op("N", 0)
      local x = plain:leaf("N", 1)
      ok, e = pcall(plain.explain, plain, x, x)
      assert.is_false(ok)
      assert.matches("records no explanations.*Fix: create it with vyre.egraph%(be, "
        .. "{explanations = true}%)", tostring(e))
      ok, e = pcall(eg.explain, eg, {}, 1)
      assert.is_false(ok)
      assert.matches("argument 1 must be a term.*Fix: ", tostring(e))
      ok, e = pcall(vyre.egraph, be, { explain = true })
      assert.is_false(ok)
      assert.matches("vyre.egraph: unknown option 'explain'.*Fix: ", tostring(e))
      ok, e = pcall(vyre.egraph, be, { explanations = 1 })
      assert.is_false(ok)
      assert.matches("vyre.egraph: explanations must be a boolean, got number.*Fix: ",
        tostring(e))
    end)

    -- typed payloads (issue 25 §2) in cost expressions and proofs ----------------------

    it("gives cost expressions an f64 leaf's value and a sym leaf's number", function()
      local eg = vyre.egraph(be)
      eg:op("Num", 0, "f64")
      eg:op("Var", 0, "sym")
      eg:op("Add", 2)
      local a, b = eg:leaf("Num", 2.75), eg:leaf("Num", -3.5)
      local v, w = eg:leaf("Var", "q"), eg:leaf("Var", "p")
      eg:union(a, b)
      eg:union(v, w)
      local root = eg:add("Add", a, v)
      local half = eg:add("Add", eg:leaf("Num", 0.5), w)
      eg:rebuild()
      -- 2.75 costs 1 + 2, -3.5 costs 10 + 3 (truncated toward zero); the raw bits of
      -- 2.75 would be past 2^62 and raise
      local cost = { Num = "(if (< payload 0) (+ 10 (abs payload)) (+ 1 payload))",
        Var = "(+ 5 (* 10 payload))", Add = "(+ 1 sum)" }
      local function trunc(x) return x < 0 and math.ceil(x) or math.floor(x) end
      local function fn(nd, cc)
        if nd.op == "Num" then
          local pl = trunc(nd.payload)
          return pl < 0 and 10 + math.abs(pl) or 1 + pl
        end
        if nd.op == "Var" then return 5 + 10 * eg:symbol(nd.payload) end
        return 1 + cc[1] + cc[2]
      end
      local _, text, c = eg:extract(root, cost)
      assert.are.equal("(Add (Num 2.75) (Var q))", text)
      assert.are.equal(1 + 3 + 5, c)
      assert.are.equal(model_cost(eg, root, fn), c)
      local _, text2, c2 = eg:extract(half, cost)
      assert.are.equal("(Add (Num 0.5) (Var q))", text2)
      assert.are.equal(1 + 1 + 5, c2)
      assert.are.equal(model_cost(eg, half, fn), c2)
      -- dot prints payloads by their type
      local dot = eg:dot()
      assert.is_truthy(dot:find('label="Num 2.75"', 1, true), dot)
      assert.is_truthy(dot:find('label="Var p"', 1, true), dot)
    end)

    it("proves equalities over f64 and symbol payloads, printed and added by type",
      function()
      local eg = vyre.egraph(be, { explanations = true })
      eg:op("Num", 0, "f64")
      eg:op("Var", 0, "sym")
      eg:op("Add", 2)
      eg:rule("comm-add", "(Add ?a ?b)", "(Add ?b ?a)")
      eg:rule("fold-add", "(Add (Num ?x) (Num ?y))", "(Num (+ ?x ?y))")
      eg:add("Add", eg:leaf("Var", "x"), eg:add("Add", eg:leaf("Num", 0.5),
        eg:leaf("Num", 1.25)))
      eg:run{ iterations = 3, time_limit = 600 }
      local rules = { ["comm-add"] = { "comm-add", "(Add ?a ?b)", "(Add ?b ?a)" } }
      -- fold-add computes its payload: replayed by adding the two numbers
      local function check(proof, t1, t2)
        local cur = show(read(t1))
        for i, st in ipairs(proof) do
          assert.are.equal(cur, st.before, "step " .. i)
          if st.rule == "fold-add" then
            local bt, at_ = read(st.before), read(st.after)
            assert.are.equal(show(replace(bt, st.at, 1, at(at_, st.at))), show(at_))
            local sum, num = at(bt, st.at), at(at_, st.at)
            if st.direction == "<=" then sum, num = num, sum end
            assert.are.equal("Add", sum[1])
            assert.are.equal("Num", sum[2][1])
            assert.are.equal("Num", sum[3][1])
            assert.are.equal("Num", num[1])
            assert.are.equal(tonumber(sum[2][2]) + tonumber(sum[3][2]), tonumber(num[2]))
          else
            assert.are.equal("comm-add", st.rule)
            assert.is_true(replay(st, rules[st.rule]))
          end
          cur = st.after
        end
        assert.are.equal(show(read(t2)), cur)
      end
      local start = "(Add (Var x) (Add (Num 0.5) (Num 1.25)))"
      local goal = "(Add (Num 1.75) (Var x))"
      assert.is_true(eg:equiv(start, goal))
      local p = eg:explain(start, goal)
      local folds = 0
      for _, st in ipairs(p) do
        if st.rule == "fold-add" then folds = folds + 1 end
      end
      assert.are.equal(1, folds)
      check(p, start, goal)
      check(eg:explain(goal, start), goal, start)
      -- a term never added as one: explain adds it, its leaves staged as their bits
      local fresh = "(Add (Var x) (Num 1.75))"
      local p2 = eg:explain(fresh, start)
      assert.is_true(#p2 > 0)
      check(p2, fresh, start)
    end)

    it("logs a Lua applier's unions as its rule's and the analyses' as \"analysis\"",
      function()
      local sizes = {}
      for _, ex in ipairs({ false, true }) do
        local eg = vyre.egraph(be, { explanations = ex })
        eg:op("Num", 0)
        eg:op("Var", 0, "sym")
        eg:op("Add", 2)
        eg:op("Mul", 2)
        eg:op("Neg", 1)
        eg:analysis("const", { leaf = "Num", fold = { Add = "+" }, modify = true })
        eg:rule("swap", "(Add ?a (Var ?v))", function() return "(Add (Var ?v) ?a)" end)
        eg:rule("neg", "(Neg ?a)", function(_, ctx)
          ctx.union(ctx.add("(Neg ?a)"), ctx.add("(Mul ?a (Num -1))"))
        end)
        eg:add("Add", eg:leaf("Num", 2), eg:leaf("Var", "y"))
        eg:add("Neg", eg:leaf("Var", "z"))
        eg:add("Add", eg:leaf("Num", 2), eg:leaf("Num", 3))
        eg:run{ iterations = 2, time_limit = 600 }
        eg:rebuild()
        sizes[#sizes + 1] = table.concat({ eg:size() }, "/")
        if ex then
          local swap = { "swap", "(Add ?a (Var ?v))", "(Add (Var ?v) ?a)" }
          local p = eg:explain("(Add (Num 2) (Var y))", "(Add (Var y) (Num 2))")
          assert.are.equal(1, #p)
          assert.are.same({ "(Add (Num 2) (Var y))", "swap", "=>", "(Add (Var y) (Num 2))" },
            { p[1].before, p[1].rule, p[1].direction, p[1].after })
          assert.is_true(replay(p[1], swap))
          p = eg:explain("(Add (Var y) (Num 2))", "(Add (Num 2) (Var y))")
          assert.are.equal(1, #p)
          assert.are.same({ "swap", "<=" }, { p[1].rule, p[1].direction })
          assert.is_true(replay(p[1], swap))
          p = eg:explain("(Neg (Var z))", "(Mul (Var z) (Num -1))")
          assert.is_true(#p >= 1)
          for _, st in ipairs(p) do assert.are.equal("neg", st.rule) end
          assert.are.equal("(Mul (Var z) (Num -1))", p[#p].after)
          p = eg:explain("(Add (Num 2) (Num 3))", "(Num 5)")
          assert.are.equal(1, #p)
          assert.are.same({ "(Add (Num 2) (Num 3))", "analysis", "=>", "(Num 5)" },
            { p[1].before, p[1].rule, p[1].direction, p[1].after })
        end
      end
      assert.are.equal(sizes[1], sizes[2])
    end)
  end)
end

-- The device's results against the reference's: costs, DAG reports and proofs must be
-- the same (the union log is sorted per batch, so the GPU's atomics do not show).
for _, kind in ipairs(backends()) do
  if kind.name ~= "reference" then
    describe("vyre.egraph extraction and proofs: the " .. kind.name .. " backend against the "
      .. "reference" .. kind.tag, function()
      local be, ref
      setup(function()
        be = kind.open()
        ref = vyre.backend("reference")
      end)

      local function outcome(b)
        local res = {}
        for seed = 1, 4 do
          local eg, root = random_graph(b, 9500 + seed, 40, 8)
          local _, x1, c1 = eg:extract(root, "(+ 1 max)")
          local _, x2, c2, rep = eg:extract(root, { L = 2, F = 1, G = 1, H = 3 }, { dag = true })
          local _, x3, c3, grep = eg:extract(root, { L = 2, F = 1, G = 1, H = 3 },
            { dag = true, exact_limit = 0 })
          res[#res + 1] = { x1, c1, x2, c2, rep.tree, rep.tree_dag, rep.greedy, rep.exact, x3,
            c3, grep.greedy }
        end
        local eg = vyre.egraph(b, { explanations = true })
        local roots = MW.setup(eg)
        eg:run{ iterations = 4, scheduler = vyre.egraph.simple(), time_limit = 600 }
        local cost = {}
        for _, o in ipairs(MW.OPS) do cost[o[1]] = 1 end
        cost.Sub = 9
        for i, r in ipairs(eg:extract(roots, cost)) do
          local p = eg:explain(MW.TERMS[i], r.text)
          local steps = {}
          for j, st in ipairs(p) do
            steps[j] = table.concat({ st.before, st.rule, st.direction,
              table.concat(st.at, "."), st.after }, " | ")
          end
          res[#res + 1] = steps
        end
        return res
      end

      it("gives the reference's costs, DAG reports and proofs", function()
        assert.are.same(outcome(ref), outcome(be))
      end)
    end)
  end
end
