-- 33: megakernels over aliased memory, and the plan cache (issues 21 §3, 26 §1/§3).
-- be:megakernel orders steps by memory, not by Buffer object: a write through a view is
-- ordered after a read of its parent (and the reverse), so random step lists over a
-- buffer and views of it give be:sequence's results bit for bit. Plans are cached per
-- backend: one backend's plans never show in another's be:stats(), a policy function
-- that plans other compositions cannot change the plan being made, and the plans go with
-- the backend. #fakecuda: the plan a CUDA device makes (through the fake driver) orders
-- the view the same way (the fake cannot run a cooperative megakernel, so results are
-- compared on the reference, and on the device under #gpu in all three grid sync modes).
local vyre = require("vyre")
local H = require("spec.helpers")

local function rng(seed)
  local s = seed ~ 0x2545F4914F6CDD1D
  if s == 0 then s = 1 end
  return function(n)
    s = s ~ (s >> 12); s = s ~ (s << 25); s = s ~ (s >> 27)
    local x = (s * 0x2545F4914F6CDD1D) >> 1
    return n and x % n or x
  end
end

local SET = "(program set (workgroup 1) (buffer y u32 write) (param v u32) (store y 0u32 v))"
local COPY = [[(program copy (workgroup 1) (buffer src u32 read) (buffer dst u32 write)
  (store dst 0u32 (load src 0u32)))]]

-- set P=1; copy out=P; set view(P)=2 (the finding of issue 26 §1)
local function alias_steps(be)
  local set, copy = be:compile(vyre.parse(SET)), be:compile(vyre.parse(COPY))
  local P, out = be:buffer("u32", 4), be:buffer("u32", 1)
  local V = P:view(1, 2)
  return { { set, { y = P, v = 1 }, { n = 1 } }, { copy, { src = P, dst = out }, { n = 1 } },
    { set, { y = V, v = 2 }, { n = 1 } } }, P, out
end

-- ---- random step lists over two roots and views of them -----------------------------------

local MAP = [[
(program amap_%d (workgroup %d)
  (buffer src u32 read)
  (buffer dst u32 write)
  (param k u32)
  (let i (gid x))
  (if (lt i (len dst))
    (then (store dst i (add (load src (rem (add (mul i 7u32) k) (len src))) k)))))]]
local INPLACE = [[
(program ainplace_%d (workgroup %d)
  (buffer x u32 read_write)
  (param k u32)
  (let i (gid x))
  (if (lt i (len x)) (then (store x i (add (mul (load x i) 3u32) k)))))]]
local ATOMIC = [[
(program aatomic (workgroup 32)
  (buffer x u32 read)
  (buffer acc u32 read_write)
  (let i (gid x))
  (if (lt i (len x)) (then (atomic add acc (rem i (len acc)) (load x i)))))]]

local ROOTS = { 256, 96 }

-- A pool entry: {root, first (0-based), count}; the whole root or a view of it.
local function random_region(r)
  local root = 1 + r(#ROOTS)
  local n = ROOTS[root]
  if r(3) == 0 then return { root, 0, n } end
  local first = r(n - 1)
  return { root, first, 1 + r(n - first) }
end

local function overlap(a, b)
  return a[1] == b[1] and a[2] < b[2] + b[3] and b[2] < a[2] + a[3]
end

-- {template, {name = region}, k}: every step race-free on its own (a map's source and
-- destination never overlap; the atomic's source never overlaps its accumulator).
local function random_list(seed)
  local r = rng(seed)
  local list = {}
  for _ = 1, 2 + r(6) do
    local wg = ({ 32, 64 })[1 + r(2)]
    local kind = r(5)
    local a, b = random_region(r), random_region(r)
    if kind <= 1 and not overlap(a, b) then
      list[#list + 1] = { MAP:format(wg, wg), { src = a, dst = b }, r(1000) }
    elseif kind == 2 and not overlap(a, b) then
      list[#list + 1] = { ATOMIC, { x = a, acc = b } }
    else
      list[#list + 1] = { INPLACE:format(wg, wg), { x = a }, r(1000) }
    end
  end
  return list, 1 + r(2), r(3) == 0 and 1 or 0
end

local function roots(be, seed)
  local r = rng(seed * 13 + 5)
  local out = {}
  for i, n in ipairs(ROOTS) do
    local vals = {}
    for j = 1, n do vals[j] = r(1 << 32) end
    out[i] = be:buffer("u32", vals)
  end
  return out
end

-- Each region a Buffer: the root itself, or a fresh view (views of one root are distinct
-- objects, as a user's would be).
local function steps_of(be, list, rs)
  local cache, steps = {}, {}
  for i, s in ipairs(list) do
    cache[s[1]] = cache[s[1]] or be:compile(vyre.parse(s[1]))
    local args, n = {}, 64
    for name, g in pairs(s[2]) do
      local root = rs[g[1]]
      args[name] = (g[2] == 0 and g[3] == #root) and root or root:view(g[2] + 1, g[3])
      if name == "dst" or name == "x" then n = g[3] end
    end
    args.k = s[3]
    steps[i] = { cache[s[1]], args, { n = n } }
  end
  return steps
end

local function compare(be, seed, grid_sync)
  local list, times, prefix = random_list(seed)
  if prefix >= #list then prefix = 0 end
  local r1, r2 = roots(be, seed), roots(be, seed)
  be:sequence(steps_of(be, list, r1), { times = times, prefix = prefix })
  assert.are.equal(times, be:megakernel(steps_of(be, list, r2),
    { times = times, prefix = prefix, grid_sync = grid_sync }))
  for i = 1, #ROOTS do
    local d = H.parity_diff(r1[i]:download(), r2[i]:download())
    if d then error(("step list %d: root %d: %s"):format(seed, i, d), 0) end
  end
end

describe("megakernels over views on the reference backend", function()
  local be = H.ref()

  it("orders a write through a view after a read of its parent", function()
    local steps, P, out = alias_steps(be)
    be:megakernel(steps)
    assert.are.equal(1, out:download()[1])
    assert.are.equal(2, P:download()[1])
    local plan = be:plan(steps)
    assert.are.same({ { steps = { 1 } }, { steps = { 2 } }, { steps = { 3 } } }, plan.layers)
    assert.are.same({ after_layer = 2, kind = "WAR", buffer = "y", from = 2, to = 3 },
      plan.barriers[2])
    -- the parent is written only through its view, and still read_write: a `read`
    -- buffer may be loaded through the GPU's non-coherent cache
    assert.truthy(plan.text:find("(buffer mg_b0 u32 read_write)", 1, true))
  end)

  it("keeps views of disjoint parts of one buffer in one layer", function()
    local set = be:compile(vyre.parse(SET))
    local P = be:buffer("u32", 8)
    local plan = be:plan({ { set, { y = P:view(1, 4), v = 1 }, { n = 1 } },
      { set, { y = P:view(5, 4), v = 2 }, { n = 1 } } })
    assert.are.equal(1, #plan.layers)
    local both = be:plan({ { set, { y = P:view(1, 5), v = 1 }, { n = 1 } },
      { set, { y = P:view(5, 4), v = 2 }, { n = 1 } } })
    assert.are.equal(2, #both.layers)
    assert.are.equal("WAW", both.barriers[1].kind)
  end)

  it("gives be:sequence's results bit for bit on random step lists with views", function()
    for seed = 1, 80 do compare(be, seed) end
  end)

  it("reads back a view and its parent by memory in be:sequence", function()
    local set = be:compile(vyre.parse(SET))
    local P = be:buffer("u32", 4)
    local V = P:view(3, 2)
    local out = be:sequence({ { set, { y = V, v = 7 }, { n = 1 } } }, { readback = { P, V } })
    assert.are.same({ 0, 0, 7, 0 }, out[1]:totable())
    assert.are.same({ 7, 0 }, out[2]:totable())
  end)

  it("lays steps out as vyre.planners.waves does (one Kahn layering, in C)", function()
    local waves = require("vyre.planners.waves")
    for seed = 1, 40 do
      local list = random_list(seed)
      local plan = be:plan(steps_of(be, list, roots(be, seed)))
      local edges = {}
      for i, d in ipairs(plan.deps) do edges[i] = { d.from, d.to } end
      local w = waves.plan({ waves = #list, edges = edges })
      assert.are.equal(#plan.layers, #w.groups)
      for l, layer in ipairs(plan.layers) do assert.are.same(layer.steps, w.groups[l]) end
      assert.are.equal(#plan.barriers, w.barriers)
    end
  end)
end)

describe("the megakernel plan cache", function()
  it("counts one backend's plans in its own be:stats() only", function()
    local a, b = vyre.backend("reference"), vyre.backend("reference")
    local steps = alias_steps(a)
    a:plan(steps)
    a:plan(steps)
    local sa, sb = a:stats(), b:stats()
    assert.are.equal(1, sa.plan_misses)
    assert.are.equal(1, sa.plan_hits)
    assert.are.equal(1, sa.plan_entries)
    assert.are.equal(0, sb.plan_misses)
    assert.are.equal(0, sb.plan_hits)
    assert.are.equal(0, sb.plan_entries)
    a:trim()
    assert.are.equal(0, a:stats().plan_entries)
    assert.is_false(a:plan(steps).cached)
  end)

  it("returns the plan asked for when the policy plans other compositions", function()
    local be = vyre.backend("reference")
    local policy = require("vyre.policy")
    local saved = policy.megakernel
    local others = {}
    for i = 1, 70 do -- more than the cache holds: every entry is evicted meanwhile
      others[i] = { { be:compile(vyre.parse(SET:gsub("program set", "program set" .. i))),
        { y = be:buffer("u32", 1), v = i }, { n = 1 } } }
    end
    local depth = 0
    policy.megakernel = function(facts)
      depth = depth + 1
      if depth == 1 then
        for i = 1, #others do be:plan(others[i]) end
      end
      depth = depth - 1
      return { mode = facts.steps == 3 and "graph" or "split", reason = "test" }
    end
    local steps, P, out = alias_steps(be)
    local ok, plan = pcall(be.plan, be, steps)
    local ok2, err2 = pcall(be.megakernel, be, steps)
    policy.megakernel = saved
    assert.is_true(ok, plan)
    assert.is_true(ok2, err2)
    assert.are.equal(3, #plan.layers)
    assert.are.equal(3, plan.facts.steps)
    assert.are.equal("graph", plan.mode)
    assert.truthy(plan.text:find("s3_", 1, true))
    assert.are.equal(1, out:download()[1])
    assert.are.equal(2, P:download()[1])
    assert.is_true(be:stats().plan_evictions > 0)
  end)

  it("drops a plan held by a policy that raises (and the backend still plans)", function()
    local be = vyre.backend("reference")
    local policy = require("vyre.policy")
    local saved = policy.megakernel
    policy.megakernel = function() error("policy broke") end
    local steps = alias_steps(be)
    local ok, e = pcall(be.plan, be, steps)
    policy.megakernel = saved
    assert.is_false(ok)
    assert.truthy(tostring(e):find("policy broke", 1, true))
    assert.truthy(tostring(e):find("Fix:", 1, true))
    collectgarbage()
    assert.are.equal(3, #be:plan(steps).layers)
    be:free()
    collectgarbage()
  end)
end)

describe("megakernels over views on the CUDA backend #gpu", function()
  local gpu
  setup(function() gpu = assert(require("vyre.cuda").device(0)) end)

  for _, mode in ipairs({ "cooperative", "split", "graph" }) do
    it("gives be:sequence's results bit for bit with views, " .. mode, function()
      local steps, P, out = alias_steps(gpu)
      gpu:megakernel(steps, { grid_sync = mode })
      assert.are.equal(1, out:download()[1])
      assert.are.equal(2, P:download()[1])
      for seed = 1, 40 do compare(gpu, seed, mode) end
    end)
  end
end)

describe("megakernel plans over views on the fake driver #fakecuda", function()
  local F = require("tests.fakecuda.harness")
  local available, why = F.available()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  it("orders a write through a view after a read of its parent", function()
    local be = F.device()
    local steps = alias_steps(be)
    local plan = be:plan(steps, { grid_sync = "split" })
    assert.are.equal(3, #plan.layers)
    assert.are.equal("WAR", plan.barriers[2].kind)
    assert.truthy(plan.text:find("(buffer mg_b0 u32 read_write)", 1, true))
    -- the device's plan is its own: a reference backend made now has none
    assert.is_true(be:stats().plan_entries >= 1)
    assert.are.equal(0, vyre.backend("reference"):stats().plan_entries)
  end)

  it("passes the plan's mode to the run, leaving the device's grid sync as it was", function()
    local be = F.device()
    local steps = alias_steps(be)
    local before = be:grid_sync("graph")
    local s0 = be:stats()
    local rounds, t = be:megakernel(steps, { grid_sync = "split", timed = true })
    local s1 = be:stats()
    assert.are.equal(1, rounds)
    -- split: one kernel per section, no graph replay (cooperative would be one launch)
    assert.is_true(s1.launches - s0.launches > 1)
    assert.are.equal(s0.graph_launches, s1.graph_launches)
    assert.is_nil(t.mode) -- the one timing record: times only; the mode is the plan's
    assert.is_true(t.wall_ns > 0)
    assert.are.equal("graph", be:grid_sync(before))
  end)
end)
