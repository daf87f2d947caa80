-- 112: e-class analyses that read other analyses (issue 25 §1, docs/EGRAPH.md, "User
-- analyses"): a make may read, with (get NAME k) and (get NAME self), the values of an
-- analysis declared before it, of the e-node's children and of its own class. The order
-- of declaration is the dependency order (a DAG: a read of itself or of a later analysis
-- is refused with a Fix), every analysis is recomputed in that order on each rebuilt
-- graph, so a change of one reaches those that read it. The device against a Lua oracle
-- (the analyses' own closures, in the same order), on the reference backend, the fake
-- CUDA driver (#fakecuda) and, on a GPU, #gpu. Then "set" analyses (uset.lua): free
-- variables over 100 and 180 symbols against a Lua oracle; and egg's lambda_if_elim.
local vyre = require("vyre")
local H = require("spec.helpers")
local X = require("spec.egraph_langs")

local backends = H.three_backends -- reference, fake driver, GPU

local O = require("spec.egraph_oracle")
local expect_error = H.expect_egraph_error
local lua_values = O.analysis_values

for _, kind in ipairs(backends()) do
  describe("vyre.egraph analyses reading analyses on the " .. kind.name .. " backend"
    .. kind.tag, function()
    local be
    setup(function() be = kind.open() end)

    -- vars (a bitset of free symbols), depth, then ground (reads vars of its own class),
    -- guard (reads vars and depth of its children) and score (reads ground and guard)
    local function graph()
      local eg = vyre.egraph(be)
      eg:op("Num", 0)
      eg:op("Var", 0, "sym")
      eg:op("F", 1)
      eg:op("Add", 2)
      eg:analysis("vars", { type = "i64", bottom = 0, merge = "(bor a b)", make = {
        Var = "(bit payload)", F = "(child 0)", Add = "(bor (child 0) (child 1))" } })
      eg:analysis("depth", { type = "i64", bottom = (1 << 62), merge = "(min a b)", make = {
        Num = "0", Var = "0", F = "(+ 1 (child 0))",
        Add = "(+ 1 (max (child 0) (child 1)))" } })
      eg:analysis("ground", { type = "bool", merge = "(or a b)", make = {
        Num = "true", F = "(== (get vars self) 0)", Add = "(== (get vars self) 0)" } })
      eg:analysis("guard", { type = "i64", bottom = 0, merge = "(bor a b)", make = {
        F = "(if (< (get depth 0) 3) (get vars 0) 0)",
        Add = "(band (get vars 0) (get vars 1))" } })
      -- flags: 1 a ground constant below, 2 a guarded Add below, 4 an F of a ground child
      eg:analysis("score", { type = "i64", bottom = 0, merge = "(bor a b)", make = {
        Num = "(if (get ground self) 1 0)",
        Add = "(bor (bor (child 0) (child 1)) (if (== (get guard self) 0) 0 2))",
        F = "(bor (child 0) (if (get ground 0) 4 0))" } })
      return eg
    end

    it("records the order of reads (a DAG) and computes every value as the Lua oracle",
      function()
        local eg = graph()
        assert.are.same({ "vars" }, eg.analyses.ground.deps)
        assert.are.same({ "depth", "vars" }, eg.analyses.guard.deps)
        assert.are.same({ "ground", "guard" }, eg.analyses.score.deps)
        math.randomseed(109)
        for round = 1, 3 do
          eg = graph()
          local ids = {}
          for i = 1, 8 do ids[#ids + 1] = eg:leaf("Num", i) end
          for _, v in ipairs({ "a", "b", "c", "d", "e" }) do ids[#ids + 1] = eg:leaf("Var", v) end
          for _ = 1, 50 do
            if math.random() < 0.4 then
              ids[#ids + 1] = eg:add("F", ids[math.random(#ids)])
            else
              ids[#ids + 1] = eg:add("Add", ids[math.random(#ids)], ids[math.random(#ids)])
            end
          end
          for _ = 1, 4 + round * 4 do eg:union(ids[math.random(#ids)], ids[math.random(#ids)]) end
          eg:rebuild()
          local memo, checked = {}, 0
          for _, name in ipairs({ "vars", "depth", "ground", "guard", "score" }) do
            for c, v in pairs(lua_values(eg, name, memo)) do
              assert.are.equal(v, eg:value(name, c), ("%s of class %d"):format(name, c))
              checked = checked + 1
            end
          end
          assert.is_true(checked > 50)
        end
      end)

    it("keeps the fixed point through rebuild: a change of vars reaches ground and score",
      function()
        local eg = graph()
        local n1 = eg:leaf("Num", 1)
        local f = eg:add("F", n1)
        local x = eg:leaf("Var", "x")
        local s = eg:add("Add", f, n1)
        assert.is_true(eg:value("ground", f))
        assert.are.equal(5, eg:value("score", s))   -- 1 (Num 1) | 4 (F of ground Num 1)
        eg:union(n1, x)                              -- Num 1 now has free variable x
        eg:rebuild()
        assert.is_false(eg:value("ground", f))
        assert.are.equal(eg:value("vars", x), eg:value("guard", f))
        -- s: guard (band vars vars) = bit x now, so 2 joins in (ground of n1's class stays
        -- true through its Num leaf, so F still gives 4)
        assert.are.equal(7, eg:value("score", s))
        local memo = {}
        for _, name in ipairs({ "ground", "guard", "score" }) do
          for c, v in pairs(lua_values(eg, name, memo)) do
            assert.are.equal(v, eg:value(name, c), ("%s of class %d"):format(name, c))
          end
        end
      end)

    it("refuses a read of itself, of a later or unknown analysis, a const one as a value, a bad k",
      function()
        local eg = vyre.egraph(be)
        eg:op("Num", 0)
        eg:op("F", 1)
        expect_error(function()
          eg:analysis("a", { type = "i64", merge = "(max a b)", make = { F = "(get a 0)" } })
        end, "names no analysis declared before this one")
        expect_error(function()
          eg:analysis("a", { type = "i64", merge = "(max a b)", make = { F = "(get b 0)" } })
        end, "names no analysis declared before this one")
        eg:analysis("k", { type = "const", make = { Num = "payload" } })
        expect_error(function()
          eg:analysis("a", { type = "i64", merge = "(max a b)", make = { F = "(get k 0)" } })
        end, "gives a constant, not a value of type i64")
        eg:analysis("d", { type = "i64", merge = "(max a b)", make = { Num = "payload" } })
        expect_error(function()
          eg:analysis("a", { type = "i64", merge = "(max a b)", make = { F = "(get d 1)" } })
        end, "needs k in [0, 1) or self")
        expect_error(function()
          eg:analysis("a", { type = "i64", merge = "(max a b)", make = { Num = "(get d 0)" } })
        end, "needs k in [0, 0) or self")
        expect_error(function()
          eg:analysis("a", { type = "i64", merge = "(max a b)", make = { F = "(get d)" } })
        end, "takes an analysis name")
        expect_error(function()
          eg:analysis("a", { type = "i64", merge = "(max a b)", make = { F = "(child 0)" },
            modify = { leaf = "Num", when = "(get d self)" } })
        end, "only for make")
        -- a failed declaration leaves no analysis behind: "a" can be declared now
        eg:analysis("a", { type = "i64", merge = "(max a b)",
          make = { F = "(+ (get d 0) (get d self))", Num = "(get d self)" } })
        local n = eg:leaf("Num", 4)
        local f = eg:add("F", n)
        assert.are.equal(4, eg:value("a", n))
        assert.are.equal(4, eg:value("a", f))  -- d of F is bottom 0: 4 + 0
      end)
  end)
end

-- "set" analyses: free variables over more than 64 symbols (uset.lua)
for _, kind in ipairs(backends()) do
  describe("vyre.egraph set analyses (multi-word bitsets) on the " .. kind.name .. " backend"
    .. kind.tag, function()
    local be
    setup(function() be = kind.open() end)

    local function lam_graph(words)
      local eg = vyre.egraph(be)
      eg:op("Sym", 0, "sym")
      eg:op("Num", 0)
      eg:op("Var", 1)
      eg:op("Lam", 2)
      eg:op("App", 2)
      eg:op("Let", 3)
      eg:analysis("fv", { type = "set", words = words, make = { Sym = "(bit payload)",
        Num = "empty", Var = "(child 0)", App = "(bor (child 0) (child 1))",
        Lam = "(band (child 1) (bnot (child 0)))",
        Let = "(bor (child 1) (band (child 2) (bnot (child 0))))" } })
      return eg
    end

    -- a random lambda graph over nsym symbols; the free symbols of each class against the
    -- Lua oracle, and of a few terms against the free variables computed on the term
    local function check(nsym, words, seed)
      math.randomseed(seed)
      local eg = lam_graph(words)
      local syms, vars, ids = {}, {}, {}
      for i = 1, nsym do
        syms[i] = eg:leaf("Sym", "x" .. i)
        vars[i] = eg:add("Var", syms[i])
        ids[#ids + 1] = vars[i]
      end
      ids[#ids + 1] = eg:leaf("Num", 1)
      local free = {}  -- the term's free symbols (numbers) by id, for terms built here
      for i = 1, nsym do free[vars[i]] = { [i] = true } end
      free[ids[#ids]] = {}
      for _ = 1, 3 * nsym do
        local r = math.random()
        local a, b = ids[math.random(#ids)], ids[math.random(#ids)]
        local t
        if r < 0.4 then
          t = eg:add("App", a, b)
          local f = {}
          for s in pairs(free[a]) do f[s] = true end
          for s in pairs(free[b]) do f[s] = true end
          free[t] = f
        else
          local x = math.random(nsym)
          t = eg:add("Lam", syms[x], a)
          local f = {}
          for s in pairs(free[a]) do if s ~= x then f[s] = true end end
          free[t] = f
        end
        ids[#ids + 1] = t
      end
      -- before unions: the device's sets are exactly each term's free symbols
      for i = #ids - 20, #ids do
        local got = {}
        for _, s in ipairs(require("vyre.egraph.uset").symbols(eg, eg:value("fv", ids[i]))) do
          got[#got + 1] = s
        end
        local want = {}
        for s in pairs(free[ids[i]]) do want[#want + 1] = "x" .. s end
        table.sort(want)
        table.sort(got)
        assert.are.same(want, got)
      end
      local high = 0
      for _, t in ipairs(ids) do
        for s in pairs(free[t]) do if s > 128 then high = high + 1 end end
      end
      if nsym > 128 then assert.is_true(high > 0) end
      -- after unions (cycles included): every class against the oracle
      for _ = 1, 10 do eg:union(ids[math.random(nsym + 1, #ids)], ids[math.random(#ids)]) end
      eg:rebuild()
      local n = 0
      for c, v in pairs(lua_values(eg, "fv")) do
        assert.are.same(v, eg:value("fv", c), ("fv of class %d"):format(c))
        n = n + 1
      end
      assert.is_true(n > nsym)
    end

    it("holds more than 64 symbols (2 words, 100 symbols) as the Lua oracle", function()
      check(100, 2, 1091)
    end)

    it("holds more than 128 symbols (3 words, 180 symbols) as the Lua oracle", function()
      check(180, 3, 1092)
    end)

    it("gives a Lua applier exact sets: symbols 5 and 69 do not alias (capture check)",
      function()
        local eg = lam_graph(2)
        local sym = {}
        for i = 0, 69 do sym[i] = eg:leaf("Sym", "s" .. i) end
        -- (Let s1 (Var s5) (Lam s69 (Var s1))): s69 is not free in (Var s5), no renaming;
        -- (Let s1 (Var s69) (Lam s69 (Var s1))): it is, the binder must be renamed
        local t1 = eg:add("Let", sym[1], eg:add("Var", sym[5]),
          eg:add("Lam", sym[69], eg:add("Var", sym[1])))
        local t2 = eg:add("Let", sym[1], eg:add("Var", sym[69]),
          eg:add("Lam", sym[69], eg:add("Var", sym[1])))
        local capture = {}
        eg:rule("let-lam-diff", "(Let ?v1 ?e (Lam ?v2 ?body))", function(s, ctx)
          local fe, fv2 = ctx.value("fv", s.e), ctx.value("fv", s.v2)
          local hit = false
          for w = 1, 2 do hit = hit or (fe[w] & fv2[w]) ~= 0 end
          capture[s.root] = hit
          if not hit then return "(Lam ?v2 (Let ?v1 ?e ?body))" end
        end)
        eg:run({ iterations = 1, time_limit = 600 })
        assert.is_false(capture[eg:find(t1)])
        assert.is_true(capture[eg:find(t2)])
        assert.is_true(eg:equiv(t1, eg:add("Lam", sym[69], eg:add("Let", sym[1],
          eg:add("Var", sym[5]), eg:add("Var", sym[1])))))
        -- the i64 bitset of the same symbols (mod 64) would alias them
        assert.are.equal(5 % 64, 69 % 64)
      end)

    it("stops with the words needed when the e-graph has more symbols than it holds",
      function()
        local eg = lam_graph(1)
        for i = 1, 65 do eg:add("Var", eg:leaf("Sym", "s" .. i)) end
        expect_error(function() eg:value("fv", 0) end,
          "analysis 'fv' holds 64 symbols (words = 1) but the e-graph has 65")
        expect_error(function() eg:value("fv", 0) end, "words = 2 or more")
        local eg2 = vyre.egraph(be)
        eg2:op("Sym", 0, "sym")
        eg2:op("Num", 0)
        expect_error(function()
          eg2:analysis("s", { type = "set", words = 65, make = { Sym = "(bit payload)" } })
        end, "words must be \"auto\" or an integer in [1, 64]")
        expect_error(function()
          eg2:analysis("s", { type = "set", words = 1, make = { Num = "(bit payload)" } })
        end, "needs a leaf op of payload type \"sym\"")
        expect_error(function()
          eg2:analysis("s", { type = "set", words = 1, merge = "(bor a b)",
            make = { Sym = "(bit payload)" } })
        end, "has no option 'merge'")
        eg2:analysis("s", { type = "set", words = 1, make = { Sym = "(bit payload)" } })
        eg2:op("G", 1)
        expect_error(function()
          eg2:rule("r", "(G ?a)", "?a", { when = "(!= (value s ?a) 0)" })
        end, "reads \"set\" analysis 's'")
      end)
  end)
end

-- egg's lambda_if_elim (tests/lambda.rs): "if-elim" rewrites (if (= (var x) e) then else)
-- to else when (let x e then) and (let x e else) are equal (egg's ConditionEqual, which
-- adds both terms). Written with rules only, on the device: "if-elim-probe" adds both let
-- terms under an auxiliary e-node (IfElim l1 l2 if else); "if-elim" matches it when l1
-- and l2 are one e-class (a variable used twice) and unites the if with else.
for _, kind in ipairs(backends()) do
  describe("vyre.egraph egg's lambda_if_elim on the " .. kind.name .. " backend" .. kind.tag,
    function()
      local be
      setup(function() be = kind.open() end)

      local START = "(if (= (var a) (var b)) (+ (var a) (var a)) (+ (var a) (var b)))"
      local function run(with_elim)
        local eg = X.lambda_graph(be)
        if with_elim then
          eg:op("IfElim", 4)
          local probe = "(IfElim (Let ?x ?e ?then) (Let ?x ?e ?else) "
            .. "(If (Eq (Var ?x) ?e) ?then ?else) ?else)"
          eg:rule("if-elim-probe", "(If (Eq (Var ?x) ?e) ?then ?else)", { { probe, probe } })
          eg:rule("if-elim", "(IfElim ?l ?l ?if ?else)", { { "?if", "?else" } })
        end
        local t = X.lambda_term(eg, START)
        local g = X.lambda_term(eg, "(+ (var a) (var b))")
        local rep = eg:run({ iterations = 30, node_limit = 10000, time_limit = 600,
          until_ = { t, g } })
        return rep, eg:equiv(t, g)
      end

      it("proves (+ (var a) (var b)), and only with if-elim", function()
        local rep, ok = run(true)
        assert.are.equal("until", rep.stop)
        assert.is_true(ok)
        assert.is_true(#rep <= 10)
        local rep0, ok0 = run(false)
        assert.is_false(ok0)
        assert.are.equal("saturated", rep0.stop)
      end)
    end)
end
