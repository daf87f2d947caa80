-- 40: vyre.egraph on the reference backend (docs/EGRAPH.md): the API, the classic
-- congruence cases (f(a) = f(b) after a = b, chains that need many rounds, self-loops,
-- cycles through unions), bulk adds and unions from tables, Arrays and Buffers, the
-- image and from_image, extraction and inspection, and the error wording.
local vyre = require("vyre")
local H = require("spec.helpers")

local function new()
  return vyre.egraph(vyre.backend("reference"))
end

describe("vyre.egraph API", function()
  it("registers ops by name with an arity and returns stable ids", function()
    local eg = new()
    assert.are.equal(0, eg:op("Add", 2))
    assert.are.equal(1, eg:op("Num", 0))
    assert.are.equal(0, eg:op("Add", 2))
    assert.are.same({ { name = "Add", arity = 2 }, { name = "Num", arity = 0 } }, eg:ops())
  end)

  it("hands out one fresh id per added e-node and counts nodes and classes", function()
    local eg = new()
    eg:op("Add", 2)
    eg:op("Num", 0)
    local a = eg:leaf("Num", 1)
    local b = eg:leaf(1, -7)
    local s = eg:add("Add", a, b)
    local t = eg:add(0, a, b)
    assert.are.same({ 0, 1, 2, 3 }, { a, b, s, t })
    local nodes, classes = eg:size()
    assert.are.equal(4, nodes)
    assert.are.equal(4, classes)
    local rounds, unions = eg:rebuild()
    assert.are.equal(2, rounds)
    assert.are.equal(1, unions)
    assert.are.equal(s, eg:find(t))
    nodes, classes = eg:size()
    assert.are.equal(3, nodes)
    assert.are.equal(3, classes)
    eg:leaf("Num", 5)
    assert.are.same({ 4, 4 }, { eg:size() })
    eg:union(a, b)
    assert.are.same({ 4, 3 }, { eg:size() })
  end)

  it("merges f(a) and f(b) after a = b, with the smaller id canonical", function()
    local eg = new()
    eg:op("f", 1)
    eg:op("x", 0)
    local a, b = eg:leaf("x", 1), eg:leaf("x", 2)
    local fa, fb = eg:add("f", a), eg:add("f", b)
    assert.are_not.equal(eg:find(fa), eg:find(fb))
    eg:union(b, a)
    assert.are.equal(a, eg:find(b))
    local rounds, unions = eg:rebuild()
    assert.are.equal(fa, eg:find(fb))
    assert.are.equal(2, rounds)
    assert.are.equal(1, unions)
    assert.are.same({ a, fa }, eg:classes())
    assert.are.same({ { op = "f", a } }, eg:nodes(fb))
    assert.are.same({ { op = "x", payload = 1 }, { op = "x", payload = 2 } }, eg:nodes(b))
  end)

  it("needs one round per level of a chain", function()
    local eg = new()
    eg:op("f", 1)
    eg:op("x", 0)
    local L = 40
    local xa, xb = eg:leaf("x", 1), eg:leaf("x", 2)
    local ta, tb = { [0] = xa }, { [0] = xb }
    for i = 1, L do
      ta[i] = eg:add("f", ta[i - 1])
      tb[i] = eg:add("f", tb[i - 1])
    end
    eg:union(xa, xb)
    local rounds, unions, report = eg:rebuild()
    assert.are.equal(L + 1, rounds)
    assert.are.equal(L, unions)
    assert.are.equal(L + 1, #report)
    for i = 0, L do assert.are.equal(ta[i], eg:find(tb[i])) end
    local nodes, classes = eg:size()
    assert.are.equal(L + 2, nodes)
    assert.are.equal(L + 1, classes)
  end)

  it("keeps self-loops and cycles through unions finite", function()
    local eg = new()
    eg:op("f", 1)
    eg:op("x", 0)
    local x = eg:leaf("x", 0)
    local fx = eg:add("f", x)
    local ffx = eg:add("f", fx)
    eg:union(x, fx) -- x = f(x): the class of x holds f of itself; f(f(x)) joins it
    local rounds, unions = eg:rebuild()
    assert.are.equal(x, eg:find(ffx))
    assert.are.equal(1, unions)
    assert.are.equal(2, rounds)
    local nodes, classes = eg:size()
    assert.are.equal(2, nodes)
    assert.are.equal(1, classes)
    assert.are.same({ { op = "x", payload = 0 }, { op = "f", x } }, eg:nodes(x))
    local term, text, cost = eg:extract(ffx, { f = 1, x = 1 })
    assert.are.equal("(x 0)", text)
    assert.are.same({ op = "x", payload = 0 }, term)
    assert.are.equal(1, cost)
  end)

  it("restores congruence through a cycle of two classes", function()
    local eg = new()
    eg:op("g", 2)
    eg:op("c", 0)
    local a, b = eg:leaf("c", 1), eg:leaf("c", 2)
    local gab, gba = eg:add("g", a, b), eg:add("g", b, a)
    local ggab = eg:add("g", gab, gba)
    local ggba = eg:add("g", gba, gab)
    eg:union(a, b)
    eg:rebuild()
    assert.are.equal(a, eg:find(b))
    assert.are.equal(gab, eg:find(gba))
    assert.are.equal(ggab, eg:find(ggba))
    eg:union(gab, a) -- g(a, a) = a, so g(g(a, b), g(b, a)) = g(a, a) joins it too
    local _, unions = eg:rebuild()
    assert.are.equal(1, unions)
    assert.are.equal(a, eg:find(ggba))
    local nodes, classes = eg:size()
    assert.are.equal(3, nodes)
    assert.are.equal(1, classes)
  end)

  it("adds in bulk from tables, Arrays and Buffers, leaves from any integer type", function()
    local eg = new()
    local be = eg.be
    eg:op("Num", 0)
    eg:op("Add", 2)
    local first, n = eg:add_many("Num", { 5, -1, 5, 1 << 40 })
    assert.are.same({ 0, 4 }, { first, n })
    first, n = eg:add_many("Num", vyre.array("i32", { 3, -1 }))
    assert.are.same({ 4, 2 }, { first, n })
    first, n = eg:add_many("Num", be:buffer("u32", { 7 }))
    assert.are.same({ 6, 1 }, { first, n })
    first, n = eg:add_many("Add", { 0, 1, 2, 3 })
    assert.are.same({ 7, 2 }, { first, n })
    first, n = eg:add_many("Add", vyre.array("u32", { 0, 1 }))
    assert.are.same({ 9, 1 }, { first, n })
    first, n = eg:add_many("Add", be:buffer("u32", { 1, 0 }))
    assert.are.same({ 10, 1 }, { first, n })
    assert.are.same({ 11, 0 }, { eg:add_many("Add", {}) })
    eg:rebuild()
    assert.are.equal(0, eg:find(2))   -- Num 5 twice
    assert.are.equal(1, eg:find(5))   -- Num -1 as i64 and as i32
    assert.are.equal(7, eg:find(9))   -- Add(0, 1) twice
    assert.are_not.equal(7, eg:find(10))
    assert.are.same({ { op = "Num", payload = 1 << 40 } }, eg:nodes(3))
    assert.are.same({ { op = "Num", payload = 7 } }, eg:nodes(6))
  end)

  it("unites in bulk and reports the merges made", function()
    local eg = new()
    eg:op("x", 0)
    eg:add_many("x", { 1, 2, 3, 4, 5, 6 })
    assert.are.equal(2, eg:union_many({ 5, 4, 4, 3, 3, 5 }))
    assert.are.equal(1, eg:union_many({ { 0, 1 }, { 1, 0 } }))
    assert.are.equal(1, eg:union_many(vyre.array("u32", { 2, 0 })))
    assert.are.equal(0, eg:union_many(eg.be:buffer("u32", { 0, 2 })))
    assert.are.equal(0, eg:union_many({}))
    assert.are.same({ 0, 0, 0, 3, 3, 3 }, { eg:find(0), eg:find(1), eg:find(2), eg:find(3),
      eg:find(4), eg:find(5) })
    local _, classes = eg:size()
    assert.are.equal(2, classes)
  end)

  it("gives the original's row signature", function()
    local eg = new()
    eg:op("Add", 2)
    eg:op("Num", 0)
    local a = eg:leaf("Num", 9)
    eg:add("Add", a, a)
    local img, spans = eg:image()
    local w = img:download()
    local sig = spans.row_signature.offset // 4
    assert.are.equal(vyre.egraph.signature(1, { 9, 0 }), w[sig + 1])
    assert.are.equal(vyre.egraph.signature(0, { 0, 0 }), w[sig + 2])
    -- mix by hand: seed, op 0, nchildren 2, children 0 and 0
    local function mix(h, v)
      local x = h ~ ((v + 0x9E3779B9 + ((h << 6) & 0xffffffff) + (h >> 2)) & 0xffffffff)
      x = ((x << 13) | (x >> 19)) & 0xffffffff
      return (x * 0x85EBCA6B) & 0xffffffff
    end
    assert.are.equal(mix(mix(mix(mix(0xA24BAED4, 0), 2), 0), 0), w[sig + 2])
  end)
end)

describe("vyre.egraph image", function()
  it("lays out rows, children and groups as the original does", function()
    local eg = new()
    eg:op("f", 1)
    eg:op("x", 0)
    local a, b = eg:leaf("x", 1), eg:leaf("x", 2)
    eg:add("f", a)
    eg:add("f", b)
    eg:union(a, b)
    eg:rebuild()
    local img, spans = eg:image()
    assert.are.same({ 3, 5, 2, 4 }, { spans.nrows, spans.nwords, spans.ngroups, spans.nids })
    local w = img:download():totable()
    local function span(k)
      local s = spans[k]
      local out = {}
      for i = 1, s.count do out[i] = w[s.offset // 4 + i] end
      return out
    end
    assert.are.same({ 0, 0, 2 }, span("row_eclass"))
    assert.are.same({ 1, 1, 0 }, span("row_op"))
    assert.are.same({ 0, 2, 4 }, span("row_children_offset"))
    assert.are.same({ 2, 2, 1 }, span("row_children_len"))
    assert.are.same({ 1, 0, 2, 0, 0 }, span("children"))
    assert.are.same({ 0, 2 }, span("group_eclass"))
    assert.are.same({ 0, 2, 3 }, span("group_offset"))
    assert.are.same({ 0, 1, 2 }, span("group_rows"))
    assert.are.equal(4 * #w, spans.bytes)
  end)

  it("loads back with from_image (Buffer, Array or string) and rebuilds the same", function()
    local eg = new()
    eg:op("g", 2)
    eg:op("c", 0)
    local ids = {}
    for i = 1, 6 do ids[i] = eg:leaf("c", i % 3) end
    for i = 1, 5 do eg:add("g", ids[i], ids[i + 1]) end
    eg:union(ids[1], ids[2])
    eg:rebuild()
    local img, spans = eg:image()
    local text = img:download():bytes()
    for _, src in ipairs({ img, img:download(), text }) do
      local eg2 = vyre.egraph.from_image(eg.be, src, spans)
      assert.are.same({ eg:size() }, { eg2:size() })
      local r, u = eg2:rebuild()
      assert.are.same({ 1, 0 }, { r, u })
      local img2 = eg2:image()
      assert.are.equal(text, img2:download():bytes())
    end
  end)

  it("rejects spans that do not fit and malformed rows", function()
    local eg = new()
    eg:op("f", 1)
    eg:op("x", 0)
    eg:add("f", eg:leaf("x", 3))
    local img, spans = eg:image()
    local bad = {}
    for k, v in pairs(spans) do bad[k] = v end
    bad.nrows = 5
    assert.truthy(H.error_of(vyre.egraph.from_image, eg.be, img, bad):find(
      "vyre.egraph.from_image: span row_eclass does not fit", 1, true))
    local w = img:download():totable()
    w[spans.row_op.offset // 4 + 1] = 9 -- an op id that is not registered
    local msg = H.error_of(vyre.egraph.from_image, eg.be, vyre.array("u32", w), spans)
    assert.truthy(msg:find("1 e-node rows of the image are malformed", 1, true))
    assert.truthy(H.error_of(vyre.egraph.from_image, eg.be, img, nil):find(
      "argument 3 (spans) must be the span table", 1, true))
  end)
end)

describe("vyre.egraph extraction and inspection", function()
  it("extracts the cheapest term per root under a cost table or function", function()
    local eg = new()
    eg:op("Mul", 2)
    eg:op("Shl", 2)
    eg:op("Num", 0)
    eg:op("Var", 0)
    local x, two, one = eg:leaf("Var", 0), eg:leaf("Num", 2), eg:leaf("Num", 1)
    local m = eg:add("Mul", x, two)
    local s = eg:add("Shl", x, one)
    eg:union(m, s)
    local outer = eg:add("Mul", m, m)
    local res = eg:extract({ m, outer }, { Mul = 5, Shl = 1, Num = 1, Var = 1 })
    assert.are.equal("(Shl (Var 0) (Num 1))", res[1].text)
    assert.are.equal(3, res[1].cost)
    assert.are.equal("(Mul (Shl (Var 0) (Num 1)) (Shl (Var 0) (Num 1)))", res[2].text)
    assert.are.equal(11, res[2].cost)
    assert.are.equal(res[2].term[1], res[2].term[2]) -- shared subterms are one table
    local term, text, cost = eg:extract(m, function(name) return name == "Shl" and 9 or 1 end)
    assert.are.equal("(Mul (Var 0) (Num 2))", text)
    assert.are.equal(3, cost)
    assert.are.same({ op = "Mul", { op = "Var", payload = 0 }, { op = "Num", payload = 2 } }, term)
  end)

  it("draws small graphs as Graphviz text", function()
    local eg = new()
    eg:op("f", 1)
    eg:op("x", 0)
    local x = eg:leaf("x", 4)
    eg:add("f", x)
    local dot = eg:dot()
    assert.truthy(dot:find("digraph egraph {", 1, true))
    assert.truthy(dot:find("subgraph cluster_0", 1, true))
    assert.truthy(dot:find("n0 [label=\"x 4\"];", 1, true))
    assert.truthy(dot:find("n1 -> n0 [lhead=cluster_0, label=\"1\"];", 1, true))
  end)
end)

describe("vyre.egraph errors", function()
  local function msg(f, ...) return H.error_of(f, ...) end

  it("words every misuse as what went wrong and how to fix it", function()
    local eg = new()
    eg:op("f", 1)
    eg:op("x", 0)
    local x = eg:leaf("x", 1)
    local cases = {
      { function() vyre.egraph(42) end, "vyre.egraph: argument 1 must be a vyre.Backend" },
      { function() eg:op("f", 2) end, "vyre.EGraph:op: op 'f' is already registered" },
      { function() eg:op("bad name", 1) end, "vyre.EGraph:op: op name must be a symbol" },
      { function() eg:op("g", -1) end, "vyre.EGraph:op: arity of 'g' must be an integer" },
      { function() eg:add("nope", x) end, "vyre.EGraph:add: unknown op 'nope'" },
      { function() eg:add("f") end, "vyre.EGraph:add: 'f' takes 1 children, got 0" },
      { function() eg:add("f", 99) end, "vyre.EGraph:add: child 1 must be an e-class id" },
      { function() eg:add("x", x) end, "vyre.EGraph:add: 'x' is a leaf op" },
      { function() eg:leaf("f", 1) end, "vyre.EGraph:leaf: 'f' has arity 1, not 0" },
      { function() eg:leaf("x", 1.5) end, "vyre.EGraph:leaf: the payload must be an integer" },
      { function() eg:union(x, -1) end, "vyre.EGraph:union: argument 2 must be an e-class id" },
      { function() eg:find(7) end, "vyre.EGraph:find: argument 1 must be an e-class id" },
      { function() eg:add_many("f", { 0, 5 }) end,
        "vyre.EGraph:add_many: 1 of the children are not existing e-class ids" },
      { function() eg:add_many("f", "ids") end,
        "vyre.EGraph:add_many: argument 2 (children) must be a table" },
      { function() eg:add_many("x", { 1, "a" }) end,
        "vyre.EGraph:add_many: payload 2 is a, not an integer" },
      { function() eg:add_many("x", vyre.array("f32", { 1 })) end,
        "vyre.EGraph:add_many: payloads of type f32" },
      { function() eg:union_many({ 0, 1, 2 }) end,
        "vyre.EGraph:union_many: 3 ids is not a whole number of pairs" },
      { function() eg:union_many({ 0, 9 }) end,
        "vyre.EGraph:union_many: 1 of the ids are not existing e-class ids" },
      { function() eg:union_many({ { 0 } }) end, "vyre.EGraph:union_many: pair 1 is not" },
      { function() eg:extract(x, { x = 0, f = 1 }) end,
        "vyre.EGraph:extract: the cost of op 'x' must be an integer in [1, 2^40]" },
      -- a string is a cost expression (issue 25 §4, spec 98); an unknown name is refused
      { function() eg:extract(x, "size") end,
        "vyre.EGraph:extract: the cost expression 'size' of op 'f': 'size' is not a name" },
      { function() eg:extract(x, true) end,
        "vyre.EGraph:extract: argument 2 (cost) must be a table" },
      { function() eg.find(nil, 0) end, "vyre.EGraph:find: called on a nil, not a vyre.EGraph" },
    }
    for _, c in ipairs(cases) do
      local m = msg(c[1])
      assert.truthy(m:find(c[2], 1, true), ("expected %q in %q"):format(c[2], m))
      assert.truthy(m:find(". Fix: ", 1, true), m)
      assert.truthy(m:find("40_egraph_spec.lua", 1, true), "position: " .. m)
    end
    -- failed calls changed nothing
    assert.are.same({ 1, 1 }, { eg:size() })
    assert.are.equal(1, eg.nids)
  end)

  it("refuses a freed e-graph and frees idempotently", function()
    local eg = new()
    eg:op("x", 0)
    eg:leaf("x", 1)
    eg:free()
    eg:free()
    assert.truthy(msg(function() eg:size() end):find("vyre.EGraph:size: the e-graph was freed",
      1, true))
    assert.are.equal("vyre.EGraph(freed)", tostring(eg))
  end)

  -- issue 21 §7: the e-graph's column schema in one place (lua/vyre/egraph/schema.lua)
  it("declares the e-graph's columns from one schema", function()
    local SC = require("vyre.egraph.schema")
    assert.are.equal("  (buffer row_op u32 read)\n  (buffer children u32 read)\n"
      .. "  (buffer stat u32 read_write)\n(let x 1u32)",
      SC.expand("  (columns read row_op children)\n  (columns read_write stat)\n(let x 1u32)"))
    local ok, e = pcall(SC.expand, "(columns read nope)")
    assert.is_false(ok)
    assert.truthy(tostring(e):find("'nope' is not a column of schema.lua", 1, true), tostring(e))
    ok, e = pcall(SC.expand, "(columns readonly row_op)")
    assert.is_false(ok)
    assert.truthy(tostring(e):find("the access must be read, write or read_write", 1, true),
      tostring(e))
    -- no egraph module declares a schema column by hand any more
    for _, f in ipairs({ "analysis", "costfn", "dag_extract", "explain", "image", "kernels",
      "match", "rebuild", "run", "saturate", "uanalysis" }) do
      local h = assert(io.open("lua/vyre/egraph/" .. f .. ".lua"))
      local text = h:read("a")
      h:close()
      for name in pairs(SC.COLUMNS) do
        assert.is_nil(text:find("(buffer " .. name .. " ", 1, true),
          ("%s.lua declares column %s by hand"):format(f, name))
      end
    end
  end)
end)
