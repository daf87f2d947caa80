-- 31: megakernels (docs/GRID.md): be:megakernel(steps, opts) runs the steps be:sequence
-- takes as one program with grid barriers only between dependent layers, and gives the
-- results of be:sequence bit for bit (random stage lists on the reference backend; #gpu:
-- on the device, with the cooperative kernel, the host split and graph mode forced); converge
-- against the host loop it replaces; be:plan's table before anything runs; the plan
-- cache counters; the policy hook; and every error with its Fix.
local vyre = require("vyre")
local H = require("spec.helpers")

local function rng(seed)
  local s = seed ~ 0x9E3779B97F4A7C15
  if s == 0 then s = 1 end
  return function(n)
    s = s ~ (s >> 12); s = s ~ (s << 25); s = s ~ (s >> 27)
    local x = (s * 0x2545F4914F6CDD1D) >> 1
    return n and x % n or x
  end
end

-- ---- step templates (each race-free on its own) -----------------------------------------

local T = {}

function T.map(wg, op)
  return ([[
(program map_%s_%d (workgroup %d)
  (buffer src u32 read)
  (buffer dst u32 write)
  (param k u32)
  (let i (gid x))
  (if (lt i (len dst))
    (then (store dst i (%s (load src (rem (add (mul i 7u32) k) (len src))) k)))))]])
    :format(op, wg, wg, op)
end

function T.inplace(wg)
  return ([[
(program inplace_%d (workgroup %d)
  (buffer x u32 read_write)
  (param k u32)
  (let i (gid x))
  (if (lt i (len x)) (then (store x i (add (mul (load x i) 3u32) k)))))]]):format(wg, wg)
end

function T.stencil(wg)
  return ([[
(program stencil_%d (workgroup %d)
  (buffer src u32 read)
  (buffer dst u32 write)
  (let i (gid x))
  (if (lt i (len dst))
    (then (store dst i
      (add (add (load src (sub i 1u32)) (load src i)) (load src (add i 1u32)))))))]])
    :format(wg, wg)
end

-- workgroup barrier and shared memory: reverse each block of 64
T.reverse = [[
(program reverse (workgroup 64)
  (buffer src u32 read)
  (buffer dst u32 write)
  (shared t u32 64)
  (let i (gid x))
  (store t (lid x) (load src i))
  (barrier)
  (store dst i (load t (sub 63u32 (lid x)))))]]

T.atomic = [[
(program atomic_sum (workgroup 32)
  (buffer x u32 read)
  (buffer acc u32 read_write)
  (let i (gid x))
  (if (lt i (len x)) (then (atomic add acc (rem i (len acc)) (load x i)))))]]

local SIZES = { 300, 256, 300, 128 }

local function kernels(be)
  local cache = {}
  return function(text)
    if not cache[text] then cache[text] = be:compile(vyre.parse(text)) end
    return cache[text]
  end
end

-- A random stage list over buffers 1..4 (and an accumulator 5): {template, bindings}.
local function random_list(seed)
  local r = rng(seed)
  local list, n = {}, 2 + r(5)
  for _ = 1, n do
    local a = 1 + r(4)
    local b = 1 + (a + r(3)) % 4 -- a different buffer: reads elsewhere race otherwise
    local kind = r(6)
    local wg = ({ 32, 64 })[1 + r(2)]
    if kind == 0 then
      local op = ({ "add", "xor", "mul" })[1 + r(3)]
      list[#list + 1] = { T.map(wg, op), { src = a, dst = b }, r(1000) }
    elseif kind == 1 then
      list[#list + 1] = { T.inplace(wg), { x = a }, r(1000) }
    elseif kind == 2 then
      list[#list + 1] = { T.stencil(wg), { src = a, dst = b } }
    elseif kind == 3 then
      list[#list + 1] = { T.reverse, { src = a, dst = b } }
    else
      list[#list + 1] = { T.atomic, { x = a, acc = 5 } }
    end
  end
  return list, 1 + r(3), r(3) == 0 and 1 or 0
end

local function fresh_buffers(be, seed)
  local r = rng(seed * 7 + 1)
  local bufs = {}
  for i, n in ipairs(SIZES) do
    local vals = {}
    for j = 1, n do vals[j] = r(1 << 32) end
    bufs[i] = be:buffer("u32", vals)
  end
  bufs[5] = be:buffer("u32", 8)
  return bufs
end

local function steps_of(list, bufs, compile)
  local steps = {}
  for i, s in ipairs(list) do
    local args = {}
    for name, id in pairs(s[2]) do args[name] = bufs[id] end
    if s[3] then args.k = s[3] end
    local n = (s[2].dst and SIZES[s[2].dst]) or (s[2].x and SIZES[s[2].x]) or 64
    if s[1] == T.reverse then n = 256 end
    steps[i] = { compile(s[1]), args, { n = n } }
  end
  return steps
end

local function contents(bufs)
  local out = {}
  for i, b in ipairs(bufs) do out[i] = b:download() end
  return out
end

-- Runs the list with be:sequence on seq_be and be:megakernel on mega_be (opts extra) and
-- raises on the first differing word.
local function compare(seq_be, mega_be, seed, extra)
  local list, times, prefix = random_list(seed)
  if prefix >= #list then prefix = 0 end
  local b1, b2 = fresh_buffers(seq_be, seed), fresh_buffers(mega_be, seed)
  seq_be:sequence(steps_of(list, b1, kernels(seq_be)), { times = times, prefix = prefix })
  local opts = { times = times, prefix = prefix }
  for k, v in pairs(extra or {}) do opts[k] = v end
  local rounds = mega_be:megakernel(steps_of(list, b2, kernels(mega_be)), opts)
  assert.are.equal(times, rounds)
  local want, got = contents(b1), contents(b2)
  for i = 1, #want do
    local d = H.parity_diff(want[i], got[i])
    if d then error(("stage list %d: buffer %d: %s"):format(seed, i, d), 0) end
  end
end

-- converge: decrement to 0, vote in a flag; the host loop it replaces
local DEC = [[
(program dec (workgroup 64)
  (buffer x u32 read_write)
  (buffer flag u32 read_write)
  (let i (gid x))
  (if (lt i (len x))
    (then (if (gt (load x i) 0u32)
      (then (store x i (sub (load x i) 1u32)) (store flag 0u32 1u32))))))]]

describe("megakernels on the reference backend", function()
  local be = H.ref()

  it("gives be:sequence's results bit for bit on random stage lists", function()
    for seed = 1, 60 do compare(be, be, seed) end
  end)

  it("converges on the device's flag like the host loop it replaces", function()
    local k = be:compile(vyre.parse(DEC))
    local init = {}
    for i = 1, 200 do init[i] = (i * 37) % 23 end
    local x1, f1 = be:buffer("u32", init), be:buffer("u32", 1)
    local host_rounds = 0
    repeat
      f1:upload({ 0 })
      be:sequence({ { k, { x = x1, flag = f1 } } })
      host_rounds = host_rounds + 1
    until f1:download()[1] == 0 or host_rounds == 1000
    local x2, f2 = be:buffer("u32", init), be:buffer("u32", { 99 })
    local rounds = be:megakernel({ { k, { x = x2, flag = f2 } } },
      { converge = { flag = f2, max = 1000 } })
    assert.are.equal(host_rounds, rounds)
    assert.are.equal(23, rounds) -- the largest start value is 22, then one quiet round
    assert.are.same(x1:download():totable(), x2:download():totable())
    assert.are.equal(0, f2:download()[1])
    -- stopped by max: the flag keeps the last round's vote
    local x3, f3 = be:buffer("u32", init), be:buffer("u32", 1)
    assert.are.equal(5, be:megakernel({ { k, { x = x3, flag = f3 } } },
      { converge = { flag = f3, max = 5 } }))
    assert.are.equal(1, f3:download()[1])
  end)

  it("plans before running: layers, barriers and their dependencies, grid, facts", function()
    local c = kernels(be)
    local a, b, d = be:buffer("u32", 64), be:buffer("u32", 64), be:buffer("u32", 64)
    local steps = {
      { c(T.inplace(64)), { x = a, k = 1 } },
      { c(T.map(64, "add")), { src = a, dst = b, k = 2 } }, -- RAW on a
      { c(T.inplace(64)), { x = d, k = 3 } },               -- independent: layer 1
      { c(T.map(64, "xor")), { src = d, dst = a, k = 4 } }, -- WAR on a (step 2 reads it)
    }
    local plan = be:plan(steps, { times = 2 })
    assert.are.same({ { steps = { 1, 3 } }, { steps = { 2 } }, { steps = { 4 } } }, plan.layers)
    assert.are.same({ after_layer = 1, kind = "RAW", buffer = "src", from = 1, to = 2 },
      plan.barriers[1])
    assert.are.equal(2, #plan.barriers)
    assert.are.equal("WAR", plan.barriers[2].kind)
    assert.truthy(plan.mode == "split" or plan.mode == "cooperative" or plan.mode == "graph")
    assert.truthy(#plan.reason > 0)
    assert.are.equal(64, plan.grid.threads)
    assert.are.equal(3, plan.facts.layers)
    assert.are.equal(2, plan.facts.rounds)
    assert.are.equal(256 + 512 + 256 + 512, plan.bytes_per_round)
    assert.truthy(plan.text:find("(grid_barrier)", 1, true))
    -- the same steps again: a cache hit
    local s0 = be:stats()
    assert.is_true(be:plan(steps, { times = 2 }).cached)
    local s1 = be:stats()
    assert.are.equal(s0.plan_hits + 1, s1.plan_hits)
    assert.are.equal(s0.plan_misses, s1.plan_misses)
    -- bound by identity, not by name: the same Buffer under two names is one buffer
    local p2 = be:plan({ { c(T.inplace(64)), { x = a, k = 1 } },
      { c(T.map(64, "add")), { src = b, dst = d, k = 2 } } })
    assert.are.equal(1, #p2.layers)
  end)

  it("asks vyre.policy.megakernel (replaceable by the user) for the mode", function()
    local policy = require("vyre.policy")
    local saved = policy.megakernel
    local seen
    policy.megakernel = function(facts)
      seen = facts
      return { mode = "split", reason = "test policy" }
    end
    local c = kernels(be)
    local a = be:buffer("u32", 64)
    local ok, plan = pcall(be.plan, be, { { c(T.inplace(64)), { x = a, k = 1 } } })
    policy.megakernel = function() return { mode = "fast" } end
    local ok2, e = pcall(be.plan, be, { { c(T.inplace(64)), { x = a, k = 1 } } })
    policy.megakernel = saved
    assert.is_true(ok, plan)
    assert.are.equal("split", plan.mode)
    assert.are.equal("vyre.policy: test policy", plan.reason)
    assert.are.equal(1, seen.steps)
    assert.is_false(ok2)
    assert.truthy(e:find("Fix:", 1, true))
    assert.truthy(plan:dot():find("digraph", 1, true))
  end)

  it("re-maps smaller workgroups, refuses it where invocations wait for each other", function()
    local c = kernels(be)
    local a, b = be:buffer("u32", 256), be:buffer("u32", 256)
    local plan = be:plan({ { c(T.inplace(32)), { x = a, k = 1 } },
      { c(T.reverse), { src = a, dst = b } } })
    assert.are.same({ 64, 1, 1 }, plan.workgroup)
    local small_reverse = T.reverse:gsub("%(workgroup 64%)", "(workgroup 32)")
      :gsub("reverse", "reverse32")
    local e = H.error_of(be.megakernel, be, { { c(small_reverse), { src = a, dst = b } },
      { c(T.inplace(64)), { x = a, k = 1 } } })
    assert.truthy(e:find("cannot be re-mapped", 1, true))
    assert.truthy(e:find("Fix:", 1, true))
  end)

  it("raises for bad options and steps, each with a Fix", function()
    local c = kernels(be)
    local a, f = be:buffer("u32", 64), be:buffer("u32", 1)
    local steps = { { c(T.inplace(64)), { x = a, k = 1 } } }
    local cases = {
      { steps, { times = 2, converge = { flag = f, max = 3 } }, "exclude each other" },
      { steps, { converge = { flag = 3, max = 3 } }, "converge.flag" },
      { steps, { converge = { flag = f } }, "converge.max" },
      { steps, { tims = 2 }, "unknown option" },
      { steps, { prefix = 3 }, "prefix" },
      { {}, nil, "no steps" },
      { steps, { converge = { flag = be:buffer("f32", 1), max = 2 } }, "flag" },
      { steps, { grid_sync = "fast" }, "grid_sync" },
    }
    for i, case in ipairs(cases) do
      local e = H.error_of(be.megakernel, be, case[1], case[2])
      assert.truthy(e:find(case[3], 1, true), ("case %d: %s"):format(i, e))
      assert.truthy(e:find("Fix:", 1, true), ("case %d: %s"):format(i, e))
    end
    local gk = be:compile(vyre.parse([[(program g (workgroup 1) (buffer x u32 read_write)
      (store x 0u32 1u32) (grid_barrier) (store x 1u32 2u32))]]))
    local e = H.error_of(be.megakernel, be, { { gk, { x = a } } })
    assert.truthy(e:find("grid statements of its own", 1, true))
  end)
end)

-- On a GPU (#gpu) and on the fake driver (#fakecuda, scripts/test.sh's fake pass: the
-- composed megakernel through the runtime, each kernel interpreted on the CPU; the sizes
-- are small already, so nothing is trimmed there).
for _, kind in ipairs(H.cuda_kinds()) do
describe("megakernels on " .. kind.name .. " " .. kind.tag, function()
  local ref, gpu
  setup(function()
    ref = vyre.backend("reference")
    gpu = kind.open()
  end)

  for _, mode in ipairs({ "cooperative", "split", "graph" }) do
    it("gives be:sequence's results bit for bit, " .. mode, function()
      for seed = 1, 40 do
        compare(gpu, gpu, seed, { grid_sync = mode })
        compare(ref, gpu, seed, { grid_sync = mode })
      end
    end)
  end

  it("converges on the device and reports the rounds, both ways", function()
    local k = gpu:compile(vyre.parse(DEC))
    local init = {}
    for i = 1, 5000 do init[i] = (i * 37) % 23 end
    for _, mode in ipairs({ "cooperative", "split", "graph" }) do
      local x, f = gpu:buffer("u32", init), gpu:buffer("u32", 1)
      local g0 = gpu:stats().graph_launches
      local steps = { { k, { x = x, flag = f } } }
      local mopts = { converge = { flag = f, max = 1000 }, grid_sync = mode, timed = true }
      assert.are.equal(mode, gpu:plan(steps, mopts).mode) -- one name per mode: the plan's
      local rounds, t = gpu:megakernel(steps, mopts)
      assert.are.equal(23, rounds)
      assert.is_true(t.wall_ns > 0 and t.mode == nil) -- the one timing record
      -- graph: one graph launch per round (the round recorded once, then replayed)
      assert.are.equal(mode == "graph" and 23 or 0, gpu:stats().graph_launches - g0)
      local xs = x:download():totable()
      for i = 1, #xs do assert.are.equal(0, xs[i]) end
    end
    local plan = gpu:plan({ { k, { x = gpu:buffer("u32", 10), flag = gpu:buffer("u32", 1) } } })
    assert.is_true(plan.facts.cooperative)
    assert.is_true(plan.grid.blocks_per_sm > 0 and plan.grid.sms > 0)
    -- occupancy has one meaning: the fraction of the SM's thread slots, in [0, 1]
    assert.is_true(math.type(plan.occupancy) == "float" and plan.occupancy > 0
      and plan.occupancy <= 1)
    assert.is_nil(plan.grid.per_sm)
    assert.are.equal("cooperative", plan.mode)
  end)
end)
end
