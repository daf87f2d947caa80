-- 41: vyre.egraph against the pure-Lua oracle (spec/egraph_oracle.lua) on the reference
-- backend: random e-graphs of 10^3 to 10^5 e-nodes (leaves with few distinct payloads,
-- bulk and single adds, bulk and single unions between them) rebuilt on the device
-- programs give the oracle's rounds and unions, the same surviving e-nodes in the same
-- order with the same canonical ids and children, and the same canonical id for every
-- id; and extraction gives the oracle's terms and costs.
local vyre = require("vyre")
local O = require("spec.egraph_oracle")

local function both(seed, n, form, opts)
  local steps = O.workload(seed, n, opts)
  local o = O.new()
  o:register_ops()
  o:apply(steps)
  local eg = vyre.egraph(vyre.backend("reference"))
  for _, op in ipairs(O.OPS) do eg:op(op[1], op[2]) end
  O.apply_egraph(eg, steps, form)
  return o, eg
end

describe("vyre.egraph against the oracle", function()
  local cases = {
    { seed = 1, n = 1000, form = "table" },
    { seed = 2, n = 1000, form = "array", opts = { payloads = 3 } },
    { seed = 3, n = 5000, form = "buffer", opts = { union_every = 4 } },
    { seed = 4, n = 20000, form = "array" },
    { seed = 5, n = 100000, form = "buffer" },
  }
  for _, c in ipairs(cases) do
    it(("rebuilds a random e-graph of %d e-nodes (seed %d, %s input) like the oracle")
      :format(c.n, c.seed, c.form), function()
      local o, eg = both(c.seed, c.n, c.form, c.opts)
      local nodes0 = eg:size()
      assert.are.equal(#o.nodes, nodes0)
      local orounds, ounions = o:rebuild()
      local rounds, unions = eg:rebuild()
      assert.are.equal(orounds, rounds)
      assert.are.equal(ounions, unions)
      assert.is_true(unions > 0)
      assert.is_nil(o:diff(eg))
      local nodes, classes = eg:size()
      assert.are.same({ #o.nodes, o:classes() }, { nodes, classes })
      -- a second rebuild finds nothing to do
      local r2, u2 = eg:rebuild()
      assert.are.same({ 1, 0 }, { r2, u2 })
      eg:free()
    end)
  end

  it("extracts the oracle's terms and costs", function()
    local o, eg = both(7, 2000, "table")
    o:rebuild()
    local cost = { L = 1, f = 2, g = 3, h = 4 }
    local roots = {}
    for i = 0, 1999, 97 do roots[#roots + 1] = i end
    local res = eg:extract(roots, cost)
    for i, r in ipairs(roots) do
      local text, c = o:extract(r, cost)
      assert.are.equal(text, res[i].text)
      assert.are.equal(c, res[i].cost)
    end
  end)

  it("gives the same ids when unions come before, between or after the adds", function()
    local steps = O.workload(11, 3000)
    local o = O.new()
    o:register_ops()
    o:apply(steps)
    o:rebuild()
    -- all unions deferred to the end: the closure is the same
    local late, unions = {}, {}
    for _, st in ipairs(steps) do
      if st.kind == "unions" or st.kind == "union" then unions[#unions + 1] = st
      else late[#late + 1] = st end
    end
    for _, st in ipairs(unions) do late[#late + 1] = st end
    local eg = vyre.egraph(vyre.backend("reference"))
    for _, op in ipairs(O.OPS) do eg:op(op[1], op[2]) end
    O.apply_egraph(eg, late, "table")
    eg:rebuild()
    assert.is_nil(o:diff(eg))
  end)
end)
