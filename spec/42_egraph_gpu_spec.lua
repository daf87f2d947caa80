-- 42: vyre.egraph on CUDA (#gpu: excluded where CUDA is not usable, and then reported
-- as not run, never as passed). The rebuild's programs on the GPU give the same bytes
-- as on the reference backend (rounds, unions, the whole image), the oracle's partition
-- and canonical ids at 10^3 to 10^6 e-nodes, the same result on every run (union-find
-- timing never shows), bulk input straight from device buffers, and the same
-- extraction. The same suite runs on the fake CUDA driver (#fakecuda, scripts/test.sh's
-- fake pass: every kernel interpreted on the CPU) at smaller sizes: 10^3, 3000 and 5000
-- e-nodes for 10^3, 10^4 and 10^5; 20000 for 10^6; 2^10 bulk leaves for 2^14; 5000
-- extracted e-nodes for 20000.
local vyre = require("vyre")
local O = require("spec.egraph_oracle")

local function load(be, steps, form)
  local eg = vyre.egraph(be)
  for _, op in ipairs(O.OPS) do eg:op(op[1], op[2]) end
  O.apply_egraph(eg, steps, form)
  return eg
end

-- The per-round counts of a rebuild report (times left out).
local function rounds_of(rep)
  local out = {}
  for i, r in ipairs(rep) do out[i] = { r.rows, r.unions, r.duplicates } end
  return out
end

local function image_text(eg)
  local img, spans = eg:image()
  local s = img:download():bytes()
  img:free()
  return s, spans
end

for _, kind in ipairs(require("spec.helpers").cuda_kinds()) do
describe("vyre.egraph on " .. kind.name .. " " .. kind.tag, function()
  local gpu, ref
  local small = kind.small

  setup(function()
    gpu = kind.open()
    ref = vyre.backend("reference")
  end)

  it("merges f(a) and f(b) after a = b and runs a 60-level chain in 61 rounds", function()
    local eg = vyre.egraph(gpu)
    eg:op("f", 1)
    eg:op("x", 0)
    local a, b = eg:leaf("x", 1), eg:leaf("x", 2)
    local ta, tb = a, b
    for _ = 1, 60 do
      ta, tb = eg:add("f", ta), eg:add("f", tb)
    end
    eg:union(a, b)
    local rounds, unions = eg:rebuild()
    assert.are.same({ 61, 60 }, { rounds, unions })
    assert.are.equal(ta, eg:find(tb))
    assert.are.same({ 62, 61 }, { eg:size() })
  end)

  local cases = small and { { 1, 1000, "table" }, { 2, 3000, "array" }, { 3, 5000, "buffer" } }
    or { { 1, 1000, "table" }, { 2, 10000, "array" }, { 3, 100000, "buffer" } }
  for _, c in ipairs(cases) do
    it(("matches the reference backend byte for byte and the oracle at %d e-nodes")
      :format(c[2]), function()
      local steps = O.workload(c[1], c[2])
      local eg_ref, eg_gpu = load(ref, steps, c[3]), load(gpu, steps, c[3])
      local r1, u1, rep1 = eg_ref:rebuild()
      local r2, u2, rep2 = eg_gpu:rebuild()
      assert.are.same({ r1, u1 }, { r2, u2 })
      assert.are.same(rounds_of(rep1), rounds_of(rep2))
      local t1, s1 = image_text(eg_ref)
      local t2, s2 = image_text(eg_gpu)
      assert.are.same(s1, s2)
      assert.is_true(t1 == t2, "images differ")
      local o = O.new()
      o:register_ops()
      o:apply(steps)
      local orr, ou = o:rebuild()
      assert.are.same({ orr, ou }, { r2, u2 })
      assert.is_nil(o:diff(eg_gpu))
      eg_ref:free()
      eg_gpu:free()
    end)
  end

  it(("gives the oracle's result at %d e-nodes, the same on every run")
    :format(small and 20000 or 1000000), function()
    local steps = O.workload(9, small and 20000 or 1000000)
    local o = O.new()
    o:register_ops()
    o:apply(steps)
    local orr, ou = o:rebuild()
    local first
    for run = 1, 3 do
      local eg = load(gpu, steps, "buffer")
      local r, u = eg:rebuild()
      assert.are.same({ orr, ou }, { r, u })
      local t = image_text(eg)
      if run == 1 then
        assert.is_nil(o:diff(eg))
        first = t
      else
        assert.is_true(first == t, "run " .. run .. " differs from run 1")
      end
      eg:free()
    end
  end)

  it("unites congruence-rich bulk input from device buffers like the reference", function()
    -- 2^14 leaves, 3 layers of 2^15 binary nodes over the layer below, 2^14 unions
    local function build(be)
      local eg = vyre.egraph(be)
      eg:op("L", 0)
      eg:op("g", 2)
      local rand = O.rng(77)
      local nl, per = small and 1 << 10 or 1 << 14, small and 1 << 11 or 1 << 15
      local leaves = {}
      for i = 1, nl do leaves[i] = i end
      local lo = eg:add_many("L", be:buffer("i64", leaves))
      local range = nl
      for _ = 1, 3 do
        local kids = {}
        for i = 1, 2 * per do kids[i] = lo + rand(range) end
        lo = eg:add_many("g", be:buffer("u32", kids))
        range = per
      end
      local pairs = {}
      for i = 1, 2 * nl do pairs[i] = rand(nl) end
      eg:union_many(be:buffer("u32", pairs))
      return eg
    end
    local a, b = build(ref), build(gpu)
    local ra, ua, repa = a:rebuild()
    local rb, ub, repb = b:rebuild()
    assert.are.same(rounds_of(repa), rounds_of(repb))
    assert.are.same({ ra, ua }, { rb, ub })
    assert.is_true(ub > (small and 600 or 10000))
    assert.is_true(image_text(a) == image_text(b))
  end)

  it("extracts the same terms and costs as the reference backend", function()
    local n = small and 5000 or 20000
    local steps = O.workload(5, n)
    local eg_ref, eg_gpu = load(ref, steps, "table"), load(gpu, steps, "table")
    local roots = {}
    for i = 0, n - 1, small and 83 or 331 do roots[#roots + 1] = i end
    local cost = { L = 1, f = 2, g = 3, h = 5 }
    local x, y = eg_ref:extract(roots, cost), eg_gpu:extract(roots, cost)
    for i = 1, #roots do
      assert.are.equal(x[i].text, y[i].text)
      assert.are.equal(x[i].cost, y[i].cost)
    end
  end)

  it("round-trips the image through from_image on the GPU", function()
    local eg = load(gpu, O.workload(6, 5000), "array")
    eg:rebuild()
    local img, spans = eg:image()
    local eg2 = vyre.egraph.from_image(gpu, img, spans)
    local r2, u2 = eg2:rebuild()
    assert.are.same({ 1, 0 }, { r2, u2 })
    assert.are.same({ eg:size() }, { eg2:size() })
    assert.is_true(image_text(eg) == image_text(eg2))
  end)
end)
end
