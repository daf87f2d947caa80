-- 115: e-class analyses in e-graph images (issue 25, docs/EGRAPH.md "The device image").
-- An image (format version 3) keeps every analysis declared on the e-graph as data, in
-- declaration order: the built-in "const" and user analyses of every type (i64, f64,
-- bool, "const", "set" of two words), modify entries with prune, (get NAME k) reads.
-- from_image declares them again, so after a run with analyses the loaded graph, on the
-- same backend and on the reference backend, gives every class the saved graph's values
-- (eg:value, eg:const), rules' `when` and a Lua applier read them alike, and a further
-- eg:run counts the same matches, e-nodes and classes. A declaration that is not data is
-- refused at eg:image naming the analysis (or left out with {analyses = false}); version 1
-- and 2 images still load; a corrupt or cut-short section is refused before the
-- e-graph's columns are allocated. Each case runs on the reference backend, on the fake
-- CUDA driver (#fakecuda, scripts/test.sh's fake pass) and, on a GPU, #gpu.
local vyre = require("vyre")
local H = require("spec.helpers")
local S = require("vyre.egraph.store")

local backends = H.three_backends -- reference, fake driver, GPU

-- The analyses in declaration order (the built-in "const" is read with eg:const).
local USER = { "vars", "mask", "depth", "big", "ground", "k", "score" }

local function declare(eg)
  eg:analysis("const", { leaf = "Num", fold = { Add = "+", Mul = "*", Neg = "neg" },
    modify = true })
  -- a set of symbols over two words (the graph interns more than 64 strings)
  eg:analysis("vars", { type = "set", words = 2, make = { Var = "(bit payload)",
    Add = "(bor (child 0) (child 1))", Mul = "(bor (child 0) (child 1))", Neg = "(child 0)",
    F = "(child 0)", Abs = "(child 0)" } })
  eg:analysis("mask", { type = "i64", bottom = 0, merge = "(bor a b)", make = {
    Var = "(bit payload)", Add = "(bor (child 0) (child 1))", Mul = "(bor (child 0) (child 1))",
    Neg = "(child 0)", F = "(child 0)", Abs = "(child 0)" } })
  eg:analysis("depth", { type = "i64", bottom = (1 << 62), merge = "(min a b)", make = {
    Num = "0", Flt = "0", Var = "0", Tag = "0", Neg = "(+ 1 (child 0))", F = "(+ 1 (child 0))",
    Abs = "(+ 1 (child 0))", Add = "(+ 1 (max (child 0) (child 1)))",
    Mul = "(+ 1 (max (child 0) (child 1)))" } })
  eg:analysis("big", { type = "f64", bottom = "-1e300", merge = "(max a b)", make = {
    Flt = "payload", Num = "(f64 payload)", Add = "(max (child 0) (child 1))",
    Neg = "(neg (child 0))" } })
  -- reads mask of its own class, declared before it
  eg:analysis("ground", { type = "bool", merge = "(or a b)", make = { Num = "true",
    Flt = "true", Add = "(== (get mask self) 0)", Mul = "(== (get mask self) 0)",
    F = "(and (child 0) (< (get depth 0) 4))" } })
  -- a user constant over f64 with two modify entries
  local both = "(and (one? (child 0)) (one? (child 1)))"
  eg:analysis("k", { type = "const", of = "f64", make = { Flt = "payload",
    Add = "(if " .. both .. " (one (+ (val (child 0)) (val (child 1)))) none)",
    Neg = "(if (one? (child 0)) (neg (val (child 0))) none)" },
    modify = { { leaf = "Flt", when = "(and (one? v) (> (val v) 100.0))" },
      { leaf = "Tag", when = "(and (one? v) (< (val v) -50.0))", payload = "(i64 (val v))" } } })
  -- an i64 analysis whose modify prunes
  eg:analysis("score", { type = "i64", bottom = math.mininteger, merge = "(max a b)",
    make = { Num = "payload", Neg = "(neg (child 0))",
      Abs = "(if (< (child 0) 0) (neg (child 0)) (child 0))" },
    modify = { leaf = "Tag", when = "(and (> v 40) (< v 60))", payload = "(* v 2)",
      prune = true } })
end

local function ops(eg)
  eg:op("Num", 0)
  eg:op("Flt", 0, "f64")
  eg:op("Var", 0, "sym")
  eg:op("Tag", 0)
  eg:op("Add", 2)
  eg:op("Mul", 2)
  eg:op("Neg", 1)
  eg:op("F", 1)
  eg:op("Abs", 1)
end

-- Rules that read the analyses (declared again on a loaded graph: rules are not saved).
local function rules(eg)
  eg:rule("add-comm", "(Add ?a ?b)", "(Add ?b ?a)")
  eg:rule("neg-neg", "(Neg (Neg ?a))", "?a")
  eg:rule("abs", "(Abs ?a)", "?a", { when = "(>= (value score ?a) 0)" })
  eg:rule("mul-zero", "(Mul ?a ?b)", "(Num 0)", { when = "(and (const? ?b) (== (const ?b) 0))" })
  eg:rule("f-ground", "(F ?a)", "(Add ?a (Num 0))", { when = "(value ground ?a)" })
  eg:rule("f-k", "(F ?a)", "(Neg (Neg ?a))", { when = "(and (has k ?a) (> (value k ?a) 7.5))" })
  -- a Lua applier (the host path) reading a constant and a set
  eg:rule("mul-one", "(Mul ?a ?b)", function(s, ctx)
    local v, state = ctx.const(s.b)
    -- symbols past 64 are in the set's second word
    if state == "one" and v == 1 and ctx.value("vars", s.a)[2] ~= 0 then return "?a" end
  end)
end

local function graph(be)
  local eg = vyre.egraph(be)
  ops(eg)
  declare(eg)
  math.randomseed(1150)
  local ids = {}
  for i = -3, 9 do ids[#ids + 1] = eg:leaf("Num", i * 7) end
  for i = 1, 6 do ids[#ids + 1] = eg:leaf("Flt", i * 21.5) end
  ids[#ids + 1] = eg:leaf("Flt", -60.25)
  for i = 1, 70 do
    local v = eg:leaf("Var", "v" .. i)
    if i % 9 == 0 or i > 64 then ids[#ids + 1] = v end
  end
  ids[#ids + 1] = eg:leaf("Num", 50)
  local un = { "Neg", "F", "Abs" }
  local bin = { "Add", "Mul" }
  for _ = 1, 60 do
    if math.random() < 0.45 then
      ids[#ids + 1] = eg:add(un[math.random(#un)], ids[math.random(#ids)])
    else
      ids[#ids + 1] = eg:add(bin[math.random(#bin)], ids[math.random(#ids)],
        ids[math.random(#ids)])
    end
  end
  for _ = 1, 3 do eg:union(ids[math.random(#ids)], ids[math.random(#ids)]) end
  -- terms for mul-zero and mul-one (the applier: a constant 1 and a wide set)
  eg:add("Mul", ids[#ids], eg:leaf("Num", 0))
  local wide = eg:add("Add", eg:leaf("Var", "v66"), eg:leaf("Var", "v1"))
  eg:add("F", eg:add("Mul", wide, eg:add("Add", eg:leaf("Num", -6), eg:leaf("Num", 7))))
  rules(eg)
  return eg
end

-- Everything a user sees of the graph and its analyses, class by class in id order;
-- ids as ranks among the classes (a later run's new ids start at nids, which a loaded
-- graph may have lower: its ids are the ones the image references).
local function view(eg)
  local classes = eg:classes()
  local rank = {}
  for i, c in ipairs(classes) do rank[c] = i end
  local out = { size = { eg:size() } }
  for i, c in ipairs(classes) do
    local row = { nodes = {} }
    for j, n in ipairs(eg:nodes(c)) do
      local t = { op = n.op, payload = n.payload }
      for k, ch in ipairs(n) do t[k] = rank[eg:find(ch)] end
      row.nodes[j] = t
    end
    row.const = { eg:const(c) }
    for _, name in ipairs(USER) do row[name] = { eg:value(name, c) } end
    out[i] = row
  end
  return out
end

local function counts(rep)
  local out = { stop = rep.stop }
  for i, r in ipairs(rep) do
    out[i] = { matches = r.matches, nodes = r.nodes, classes = r.classes }
  end
  return out
end

local RUN = { iterations = 3, scheduler = vyre.egraph.simple(), semi_naive = false }

local function copy_spans(spans)
  local t = {}
  for k, v in pairs(spans) do t[k] = v end
  return t
end

local function deep(v)
  if type(v) ~= "table" then return v end
  local t = {}
  for k, x in pairs(v) do t[k] = deep(x) end
  return t
end

for _, kind in ipairs(backends()) do
  describe("e-graph images with analyses on the " .. kind.name .. " backend" .. kind.tag,
    function()
      local be, ref
      setup(function()
        be = kind.open()
        ref = vyre.backend("reference")
      end)

      it("saves every analysis and loads it: the same values, reads and further runs",
        function()
          local eg = graph(be)
          local rep = eg:run({ iterations = 1, scheduler = vyre.egraph.simple() })
          assert.are.equal(1, #rep)
          local want = view(eg)
          -- the analyses did something: folded constants, a pruned class, set words past 64
          local seen = { one = 0, k = 0, wide = 0 }
          for _, row in ipairs(want) do
            if row.const[2] == "one" then seen.one = seen.one + 1 end
            if row.k[2] == "one" then seen.k = seen.k + 1 end
            if row.vars[1][2] ~= 0 then seen.wide = seen.wide + 1 end
          end
          assert.is_true(seen.one > 5 and seen.k > 2 and seen.wide > 0)
          assert.is_truthy(eg:lookup("(Tag 100)"))       -- score's modify
          assert.is_truthy(eg:lookup("(Tag -60)"))       -- k's second modify entry
          assert.is_true(eg:equiv("(Mul (Add (Var v66) (Var v1)) (Add (Num -6) (Num 7)))",
            "(Add (Var v66) (Var v1))"))                  -- the applier's const and set reads
          local img, spans = eg:image()
          assert.are.equal(3, spans.version)
          assert.are.equal(8, spans.nanalyses)
          local names = {}
          for i, d in ipairs(spans.analyses) do names[i] = d.name end
          assert.are.same({ "const", "vars", "mask", "depth", "big", "ground", "k", "score" },
            names)
          -- plain data: the spec as declared (op names, expression strings, modify lists)
          assert.are.same({ leaf = "Num", fold = { Add = "+", Mul = "*", Neg = "neg" },
            modify = true }, spans.analyses[1].spec)
          assert.are.equal(2, #spans.analyses[7].spec.modify)
          assert.is_true(spans.analyses[8].spec.modify.prune)
          local bytes = img:download():bytes()
          local loaded = {
            vyre.egraph.from_image(be, img, spans),
            vyre.egraph.from_image(ref, bytes, spans),
          }
          for _, eg2 in ipairs(loaded) do
            rules(eg2)
            assert.are.same(want, view(eg2))
            -- its own image holds the same declarations and the same words
            local img2, spans2 = eg2:image()
            assert.are.same(spans.analyses, spans2.analyses)
            assert.are.equal(bytes, img2:download():bytes())
          end
          -- a further run: the same matches per rule, e-nodes and classes, then values
          local again = counts(eg:run(RUN))
          local after = view(eg)
          assert.are_not.same(want.size, after.size)
          for _, eg2 in ipairs(loaded) do
            assert.are.same(again, counts(eg2:run(RUN)))
            assert.are.same(after, view(eg2))
          end
        end)

      it("keeps the declaration as it was declared, and \"const\" declared again once",
        function()
          local eg = vyre.egraph(be)
          ops(eg)
          local spec = { type = "i64", bottom = 0, merge = "(max a b)", make = { Num = "payload" } }
          eg:analysis("n", spec)
          spec.make.Num = "(+ payload 1)" -- changed after the declaration: not the analysis
          eg:analysis("const", { leaf = "Num" })
          eg:analysis("const", { leaf = "Num", fold = { Add = "+" } })
          local three = eg:leaf("Num", 3)
          local c = eg:add("Add", eg:leaf("Num", 2), three)
          local img, spans = eg:image()
          assert.are.same({ "n", "const" }, { spans.analyses[1].name, spans.analyses[2].name })
          assert.are.equal(2, spans.nanalyses)
          assert.are.equal("payload", spans.analyses[1].spec.make.Num)
          assert.are.same({ Add = "+" }, spans.analyses[2].spec.fold)
          -- the span table is a copy: changing it changes neither the graph nor its images
          spans.analyses[1].spec.make.Num = "7"
          local _, spans2 = eg:image()
          assert.are.equal("payload", spans2.analyses[1].spec.make.Num)
          local eg2 = vyre.egraph.from_image(be, img, spans2)
          assert.are.same({ 5, "one" }, { eg2:const(c) })
          assert.are.equal(3, eg2:value("n", three))
        end)

      it("refuses at eg:image a declaration that is not data, or leaves all out on request",
        function()
          local eg = vyre.egraph(be)
          ops(eg)
          eg:analysis("depth", { type = "i64", bottom = 0, merge = "(max a b)",
            make = { Num = "0", Neg = "(+ 1 (child 0))" } })
          -- a make table with a metatable: its copy could differ from what was declared
          eg:analysis("m", { type = "i64", bottom = 0, merge = "(max a b)",
            make = setmetatable({ Num = "payload" }, {}) })
          local c = eg:add("Neg", eg:leaf("Num", 4))
          local err = H.error_of(eg.image, eg)
          assert.matches("^vyre%.EGraph:image: analysis 'm' cannot be saved in the image: its "
            .. "declaration holds a table with a metatable at spec%.make, which is not data%. "
            .. "Fix: .*eg:image{analyses = false}", err)
          -- a declaration option holding a Lua function (none takes one today): the same rule
          local IA = require("vyre.egraph.image_analyses")
          local eg3 = vyre.egraph(be)
          ops(eg3)
          IA.record(eg3, "hooked", { type = "i64", hook = { on = function() end } })
          assert.matches("analysis 'hooked' cannot be saved in the image: its declaration "
            .. "holds a function at spec%.hook%.on", H.error_of(eg3.image, eg3))
          -- {analyses = false}: no section, said so in the table; declare them after loading
          local img, spans = eg:image({ analyses = false })
          assert.are.equal(false, spans.analyses)
          assert.are.equal(0, spans.nanalyses)
          local eg2 = vyre.egraph.from_image(be, img, spans)
          assert.matches("the e%-graph has no analysis 'depth'.*Fix: ",
            H.error_of(eg2.value, eg2, "depth", c))
          eg2:analysis("depth", { type = "i64", bottom = 0, merge = "(max a b)",
            make = { Num = "0", Neg = "(+ 1 (child 0))" } })
          assert.are.equal(eg:value("depth", c), eg2:value("depth", c))
          for _, bad in ipairs({ { { analyses = true }, "analyses must be false or left out" },
            { { speed = 1 }, "unknown option 'speed'" },
            { 5, "argument 1 %(opts%) must be a table" } }) do
            assert.matches("vyre%.EGraph:image: " .. bad[2] .. ".*Fix: ",
              H.error_of(eg.image, eg, bad[1]))
          end
        end)

      it("loads version 1 and 2 images and refuses corrupt analysis sections before "
        .. "allocating", function()
          local eg = vyre.egraph(be)
          ops(eg)
          eg:analysis("const", { leaf = "Num", fold = { Add = "+" } })
          eg:analysis("mask", { type = "i64", bottom = 0, merge = "(bor a b)",
            make = { Var = "(bit payload)", F = "(child 0)" } })
          eg:analysis("ground", { type = "bool", merge = "(or a b)",
            make = { Num = "true", F = "(== (get mask self) 0)" } })
          local f = eg:add("F", eg:leaf("Var", "x"))
          local a = eg:add("Add", eg:leaf("Num", 1), eg:leaf("Num", 2))
          eg:rebuild()
          local img, spans = eg:image()
          -- precompile.base runs as the new e-graph is made (its stat buffer, its fixed
          -- kernels), S.reserve allocates its columns: a section of the wrong shape is
          -- refused before the first, one the e-graph cannot declare before the second
          local PC = require("vyre.egraph.precompile")
          local reserve, base, reserved, made = S.reserve, PC.base, 0, 0
          S.reserve = function(...)
            reserved = reserved + 1
            return reserve(...)
          end
          PC.base = function(...)
            made = made + 1
            return base(...)
          end
          local ok, err = pcall(function()
            local function refused(sp, want)
              reserved, made = 0, 0
              local msg = H.error_of(vyre.egraph.from_image, be, img, sp)
              assert.matches("^vyre%.egraph%.from_image: ", msg)
              assert.is_truthy(msg:find(want, 1, true), msg)
              assert.is_truthy(msg:find("Fix: ", 1, true), msg)
              assert.are.equal(0, reserved, "allocated before refusing: " .. msg)
              local declaring = msg:find("does not declare on this e-graph", 1, true)
              assert.are.equal(declaring and 1 or 0, made, "made an e-graph: " .. msg)
            end
            local function with(changes, list)
              local t = copy_spans(spans)
              for k, v in pairs(changes) do t[k] = v end
              if list then
                t.analyses = list(deep(spans.analyses))
                if t.nanalyses == spans.nanalyses and t.analyses then
                  t.nanalyses = #t.analyses
                end
              end
              return t
            end
            refused(with({ version = 4 }), "format version 4; this vyre reads versions 1 to 3")
            refused(with({ version = 2 }), "spans.analyses or spans.nanalyses is set but "
              .. "spans.version is 2")
            refused(with({ nanalyses = false }), "spans.nanalyses must be the number of "
              .. "analyses, got false")
            local t = with({})
            t.analyses = nil
            refused(t, "spans.analyses is missing")
            refused(with({ analyses = "const" }), "spans.analyses must be a list")
            -- cut short: the last entry lost, the count kept
            local short = with({})
            short.analyses = deep(spans.analyses)
            short.analyses[3] = nil
            refused(short, "spans.analyses has 2 entries but spans.nanalyses is 3 (cut short?)")
            refused(with({ analyses = false }), "spans.analyses is false but spans.nanalyses is 3")
            refused(with({}, function(l) l[2] = nil return l end), "is not a list")
            refused(with({}, function(l) l[1] = "const" return l end),
              "spans.analyses[1] is a string, not {name =, spec =}")
            refused(with({}, function(l) l[2].why = 1 return l end),
              "spans.analyses[2] has a field why")
            refused(with({}, function(l) l[2].name = "a b" return l end),
              "spans.analyses[2].name must be an analysis name, got 'a b'")
            refused(with({}, function(l) l[3].name = "mask" return l end),
              "spans.analyses[3] ('mask') names an analysis declared before it")
            refused(with({}, function(l) l[2].spec = "x" return l end),
              "spans.analyses[2].spec must be a table, got string")
            refused(with({}, function(l) l[2].spec.make.F = print return l end),
              "spans.analyses[2] ('mask') holds a function at spans.analyses[2].spec.make.F")
            refused(with({}, function(l) l[2].spec.bottom = 0 / 0 return l end),
              "holds NaN at spans.analyses[2].spec.bottom")
            refused(with({}, function(l)
              local d = {}
              l[2].spec.x = d
              for _ = 1, 40 do d.d = {} d = d.d end
              return l
            end), "tables nested deeper than 32")
            -- well-formed data that the e-graph does not accept as declared
            refused(with({}, function(l) l[2], l[3] = l[3], l[2] return l end),
              "spans.analyses[2] ('ground') does not declare on this e-graph: make of 'F' "
              .. "'(== (get mask self) 0)': (get mask ...) names no analysis declared before this")
            refused(with({}, function(l) table.remove(l, 2) return l end),
              "spans.analyses[2] ('ground') does not declare")
            refused(with({}, function(l) l[2].spec.make.F = "(bor (child 0)" return l end),
              "spans.analyses[2] ('mask') does not declare on this e-graph")
            refused(with({}, function(l) l[2].spec.make.G = "0" return l end),
              "unknown op 'G'")
            refused(with({}, function(l) l[2].spec.type = "u8" return l end),
              "type must be")
            refused(with({}, function(l) l[1].spec.leaf = "Add" return l end),
              "spans.analyses[1] ('const') does not declare on this e-graph: leaf op 'Add' has "
              .. "arity 2")
          end)
          S.reserve, PC.base = reserve, base
          assert(ok, err)
          -- version 2 (no analyses) and version 1 load, without analyses
          local v2 = copy_spans(spans)
          v2.version, v2.analyses, v2.nanalyses = 2, nil, nil
          local eg2 = vyre.egraph.from_image(be, img, v2)
          assert.is_true(eg2:equiv("(F (Var x))", "(F (Var x))"))
          assert.matches("the e%-graph has no analysis.*Fix: ", H.error_of(eg2.const, eg2, a))
          assert.matches("no analysis 'mask'.*Fix: ", H.error_of(eg2.value, eg2, "mask", f))
          -- unchanged, the section loads
          local eg3 = vyre.egraph.from_image(be, img, spans)
          assert.are.same({ 3, "one" }, { eg3:const(a) })
          assert.is_false(eg3:value("ground", f))
          assert.are.equal(eg:value("mask", f), eg3:value("mask", f))
        end)

      it("a loaded graph hands out the ids the saved one would (spans.nids kept)", function()
        local eg = vyre.egraph(be)
        eg:op("Num", 0)
        eg:op("Neg", 1)
        local a = eg:leaf("Num", 1)
        eg:add("Neg", a)
        local c = eg:leaf("Num", 2)
        -- (Num 2) has the last id; once united with (Num 1) no row names it, so only
        -- spans.nids tells the loader that the next id is 3
        eg:union(a, c)
        eg:rebuild()
        local img, spans = eg:image()
        local eg2 = vyre.egraph.from_image(be, img, spans)
        assert.are.equal(eg:leaf("Num", 7), eg2:leaf("Num", 7))
        assert.are.equal(eg:add("Neg", c), eg2:add("Neg", c))
        eg:free()
        eg2:free()
      end)
    end)
end
