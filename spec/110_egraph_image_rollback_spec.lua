-- 110: e-graphs, issue 25 leftovers (docs/EGRAPH.md, "The device image", "Limits and
-- rollback", "Proofs"). Images with typed payloads: i64, f64 and sym leaves made on one
-- backend load on the reference backend (and back) with the same lookups, equivalences
-- and extractions; old, newer and corrupt span tables are refused before anything is
-- allocated. node_limit rollback with explanations on: the rolled-back iteration leaves the
-- e-graph and its proof logs exactly as after the previous iteration (compared with a
-- run that stopped there), every later proof replays step by step (as spec 98 replays
-- them), and no union of the rolled-back iteration is ever named. Each case runs on the
-- reference backend, on the fake CUDA driver (#fakecuda, scripts/test.sh's fake pass)
-- and, on a GPU, #gpu.
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

local by_name = PR.by_name
local read = PR.read

-- The union log as the device holds it: every pair names an id below nids.
-- The logged unions as a sorted list of {a, b}: on a GPU the threads of one batch
-- append in the order they reach the log, so two equal runs log the same unions in
-- different orders (the reference and the fake driver always in one).
local function union_log(eg)
  local x = eg.xlog
  if x.nu == 0 then return {} end
  local a = eg.xu_a:download({ count = x.nu })
  local b = eg.xu_b:download({ count = x.nu })
  local out = {}
  for i = 1, x.nu do out[i] = { a[i], b[i] } end
  table.sort(out, function(p, q) return p[1] < q[1] or (p[1] == q[1] and p[2] < q[2]) end)
  return out
end

local function wrapped(k, n)
  local s = ("(Num %d)"):format(n)
  for _ = 1, k do s = "(G " .. s .. ")" end
  return "(F " .. s .. ")"
end

-- Adds term text t (leaves: (Num int), (Flt number), (Var name)); returns its id.
local function add_term(eg, t)
  local function add(x)
    if x[1] == "Num" then return eg:leaf("Num", math.tointeger(tonumber(x[2]))) end
    if x[1] == "Flt" then return eg:leaf("Flt", tonumber(x[2]) + 0.0) end
    if x[1] == "Var" then return eg:leaf("Var", x[2]) end
    return eg:add(x[1], add(x[2]), add(x[3]))
  end
  return add(read(t))
end

-- every payload type: i64 (Num), f64 (Flt), sym (Var), under Add and Mul
local function typed(be)
  local eg = vyre.egraph(be)
  eg:op("Add", 2)
  eg:op("Mul", 2)
  eg:op("Num", 0)
  eg:op("Flt", 0, "f64")
  eg:op("Var", 0, "sym")
  -- interned out of alphabetical order, so a sorted table would renumber them
  eg:symbol("zeta")
  eg:symbol("alpha")
  for _, t in ipairs({ "(Add (Var zeta) (Num -7))", "(Mul (Flt 0.25) (Var alpha))",
    "(Add (Flt -1.5e300) (Var y))", "(Mul (Num 3) (Flt 2))" }) do add_term(eg, t) end
  eg:union(eg:lookup("(Add (Var zeta) (Num -7))"), eg:lookup("(Mul (Flt 0.25) (Var alpha))"))
  eg:rebuild()
  return eg
end

local QUERIES = { "(Add (Var zeta) (Num -7))", "(Mul (Flt 0.25) (Var alpha))",
  "(Add (Flt -1.5e300) (Var y))", "(Mul (Num 3) (Flt 2))", "(Var y)", "(Flt 0.25)",
  "(Num -7)", "(Var beta)", "(Flt 0.5)", "(Num 7)" }

local function answers(eg)
  local out = {}
  for i, q in ipairs(QUERIES) do
    local c = eg:lookup(q)
    out[i] = { q, c ~= nil, c ~= nil and select(2, eg:extract(c, { Var = 1, Num = 1,
      Flt = 1, Add = 1, Mul = 5 })) or false }
  end
  out.equiv = { eg:equiv(QUERIES[1], QUERIES[2]), eg:equiv(QUERIES[1], QUERIES[3]) }
  out.symbols = { eg:symbol("zeta"), eg:symbol("alpha"), eg:symbol("y") }
  out.size = { eg:size() }
  return out
end

for _, kind in ipairs(backends()) do
  describe("e-graph images with typed payloads on the " .. kind.name .. " backend"
    .. kind.tag, function()
    local be, ref
    setup(function()
      be = kind.open()
      ref = vyre.backend("reference")
    end)

    it("round-trips i64, f64 and sym payloads to the reference backend and back", function()
      local eg = typed(be)
      local want = answers(eg)
      assert.are.same({ true, false }, want.equiv)
      assert.are.same({ 0, 1, 2 }, want.symbols)
      local img, spans = eg:image()
      assert.are.equal(3, spans.version)
      -- (Var beta) was interned by answers' lookup: every interned string, in order
      assert.are.same({ "zeta", "alpha", "y", "beta" }, spans.symbols)
      assert.are.equal("f64", spans.ops[4].ptype)
      assert.are.equal("sym", spans.ops[5].ptype)
      local bytes = img:download():bytes()
      local eg2 = vyre.egraph.from_image(ref, bytes, spans)
      assert.are.same(want, answers(eg2))
      -- and back onto this backend from the reference's image: the same words
      local img2, spans2 = eg2:image()
      assert.are.equal(bytes, img2:download():bytes())
      local eg3 = vyre.egraph.from_image(be, img2:download(), spans2)
      assert.are.same(want, answers(eg3))
      -- a new symbol interned after loading gets the next number
      assert.are.equal(3, eg3:symbol("beta"))
      assert.are.equal(4, eg3:symbol("gamma"))
    end)

    it("reads version 1 span tables as i64 and refuses newer and corrupt ones", function()
      local eg = vyre.egraph(be)
      eg:op("F", 1)
      eg:op("Num", 0)
      eg:add("F", eg:leaf("Num", -3))
      eg:rebuild()
      local img, spans = eg:image()
      local function with(changes)
        local t = {}
        for k, v in pairs(spans) do t[k] = v end
        for k, v in pairs(changes) do t[k] = v end
        return t
      end
      -- version 1: no version, no symbols, no payload types
      local old = with({ version = false, symbols = false })
      old.version, old.symbols, old.analyses, old.nanalyses = nil, nil, nil, nil
      old.ops = { { name = "F", arity = 1 }, { name = "Num", arity = 0 } }
      local eg1 = vyre.egraph.from_image(be, img, old)
      assert.is_true(eg1:equiv("(F (Num -3))", "(F (Num -3))"))
      local function err(sp, image)
        return H.error_of(vyre.egraph.from_image, be, image or img, sp)
      end
      assert.matches("from_image: the image is format version 4; this vyre reads "
        .. "versions 1 to 3%. Fix: ", err(with({ version = 4 })))
      assert.matches("spans.version must be a format version.*Fix: ",
        err(with({ version = "2" })))
      local o1 = with({})
      o1.version = nil
      assert.matches("spans.symbols is set but spans.version is not.*Fix: ", err(o1))
      assert.matches("spans.ops%[2%] %('Num'%) has payload type str.*Fix: ",
        err(with({ ops = { { name = "F", arity = 1, ptype = "i64" },
          { name = "Num", arity = 0, ptype = "str" } } })))
      assert.matches("spans.ops%[1%] %('F'%) has payload type f64.*Fix: ",
        err(with({ ops = { { name = "F", arity = 1, ptype = "f64" },
          { name = "Num", arity = 0 } } })))
      assert.matches("spans.symbols%[2%] %('a'%) appears twice.*Fix: ",
        err(with({ symbols = { "a", "a" } })))
      assert.matches("spans.symbols%[1%] is a number, not a string.*Fix: ",
        err(with({ symbols = { 1 } })))
      -- a sym leaf naming a symbol the table does not hold (checked on the device)
      local sy = vyre.egraph(be)
      sy:op("Var", 0, "sym")
      sy:op("G", 1)
      sy:add("G", sy:leaf("Var", "x"))
      sy:leaf("Var", "w")
      sy:rebuild()
      local simg, sspans = sy:image()
      local short = {}
      for k, v in pairs(sspans) do short[k] = v end
      short.symbols = { "x" }
      assert.matches("1 e%-node rows of the image are malformed.*symbol payload not in "
        .. "spans.symbols.*Fix: ", H.error_of(vyre.egraph.from_image, be, simg, short))
      -- the high word of a sym payload must be zero
      local w = simg:download():totable()
      local leaf
      local ops = simg and sspans.row_op.offset // 4
      for r = 1, sspans.nrows do
        if w[ops + r] == 0 then leaf = r break end
      end
      local off = w[sspans.row_children_offset.offset // 4 + leaf]
      w[sspans.children.offset // 4 + off + 2] = 1
      assert.matches("1 e%-node rows of the image are malformed.*Fix: ",
        H.error_of(vyre.egraph.from_image, be, vyre.array("u32", w), sspans))
      -- unchanged, it loads
      assert.is_true(vyre.egraph.from_image(be, simg, sspans):equiv("(G (Var x))",
        "(G (Var x))"))
    end)
  end)

  describe("e-graph node_limit rollback with explanations on the " .. kind.name
    .. " backend" .. kind.tag, function()
    local be
    setup(function() be = kind.open() end)

    -- n leaves (Num 0 .. n-1), each under an F, wrapped in one more G per iteration
    local WRAP = { { "wrap", "(F ?a)", "(F (G ?a))" } }
    local function make(n)
      local eg = vyre.egraph(be, { explanations = true })
      eg:op("F", 1)
      eg:op("G", 1)
      eg:op("Num", 0)
      for i = 0, n - 1 do eg:add("F", eg:leaf("Num", i)) end
      eg:rule(WRAP[1][1], WRAP[1][2], WRAP[1][3])
      return eg
    end
    local function run(eg, o)
      o.scheduler, o.time_limit = vyre.egraph.simple(), 600
      return eg:run(o)
    end

    it("rolls the graph and the proof logs back to the previous iteration", function()
      local ref = make(12)
      run(ref, { iterations = 2 })
      local eg = make(12)
      local rep = run(eg, { iterations = 10, node_limit = 80 })
      assert.are.equal("node_limit", rep.stop)
      assert.are.equal(3, #rep)
      assert.is_truthy(rep[3].rolled_back)
      assert.are.equal("node_limit", rep[3].rolled_back.reason)
      assert.are.equal(72, (eg:size()))
      assert.are.equal(ref:dot(), eg:dot())
      -- the logs hold exactly what the run that stopped after two iterations holds
      for _, k in ipairs({ "rows", "tw", "nu", "ids" }) do
        assert.are.equal(ref.xlog[k], eg.xlog[k], "log counter " .. k)
      end
      assert.are.same(union_log(ref), union_log(eg))
      local rules = by_name(WRAP)
      for i = 0, 11, 5 do
        for k = 1, 2 do
          local p = eg:explain(wrapped(0, i), wrapped(k, i))
          assert.are.equal(k, check_proof(p, wrapped(0, i), wrapped(k, i), rules))
          assert.are.same(ref:explain(wrapped(0, i), wrapped(k, i)), p)
          check_proof(eg:explain(wrapped(k, i), wrapped(0, i)), wrapped(k, i),
            wrapped(0, i), rules)
        end
        -- the third wrap was only made by the rolled-back iteration
        local ok, e = pcall(eg.explain, eg, wrapped(0, i), wrapped(3, i))
        assert.is_false(ok)
        assert.matches("the two terms are not equal.*Fix: ", tostring(e))
      end
      -- the run goes on from there, its new unions logged after the kept ones (the
      -- graph is no longer ref's: explain added the terms it was asked about)
      local nu = eg.xlog.nu
      rep = run(eg, { iterations = 1, node_limit = 100000 })
      assert.is_nil(rep[1].rolled_back)
      assert.is_true(eg.xlog.nu > nu)
      for i = 0, 11, 5 do
        local p = eg:explain(wrapped(0, i), wrapped(3, i))
        assert.are.equal(3, check_proof(p, wrapped(0, i), wrapped(3, i), rules))
      end
    end)

    it("proves the math workload's equalities after a rollback, every step replayed",
      function()
      local eg = vyre.egraph(be, { explanations = true })
      MW.setup(eg)
      local rep = run(eg, { iterations = 20, node_limit = 300 })
      assert.are.equal("node_limit", rep.stop)
      assert.is_truthy(rep[#rep].rolled_back)
      local kept = #rep - 1
      -- the same workload run for the kept iterations only (with the same node_limit:
      -- near it the applies are checked rule by rule, which orders the log differently)
      local ref = vyre.egraph(be, { explanations = true })
      MW.setup(ref)
      local rrep = run(ref, { iterations = kept, node_limit = 300 })
      assert.are.equal(kept, #rrep)
      assert.is_nil(rrep[#rrep].rolled_back)
      assert.are.equal(ref:dot(), eg:dot())
      assert.are.same(union_log(ref), union_log(eg))
      local cols, counts = eg:buffers()
      -- no logged union names an id the rollback took back
      for i, u in ipairs(union_log(eg)) do
        assert.is_true(u[1] < counts.ids and u[2] < counts.ids, "union " .. i)
      end
      local rules = by_name(MW.RULES)
      local parent = cols.parent:download({ count = counts.ids })
      local byclass, classes = {}, {}
      for id = 0, counts.ids - 1 do
        local c = parent[id + 1]
        if not byclass[c] then byclass[c] = {} classes[#classes + 1] = c end
        local l = byclass[c]
        l[#l + 1] = id
      end
      math.randomseed(110)
      local tried = 0
      for _, c in ipairs(classes) do
        local l = byclass[c]
        if #l >= 2 and tried < 40 then
          local a, b = l[math.random(1, #l)], l[math.random(1, #l)]
          local p = eg:explain(a, b)
          if #p > 0 then
            check_proof(p, p[1].before, p[#p].after, rules)
            tried = tried + 1
          end
        end
      end
      assert.is_true(tried >= 10, "too few pairs in one class: " .. tried)
    end)
  end)
end
