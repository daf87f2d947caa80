-- 35: device profiles (vyre.cuda.profile, be:profile) and the megakernel policy
-- (vyre.policy): every profile has every field with published values, the reference
-- backend's profile, the default rule's branches, a user policy replacing it, and every
-- error. The CUDA half (#gpu) checks be:profile() against the driver's own attributes.
local vyre = require("vyre")
local H = require("spec.helpers")
local profiles = require("vyre.profiles")
local policy = require("vyre.policy")

local KiB, MiB = 1024, 1024 * 1024

describe("device profiles", function()
  it("vyre.cuda.profile, vyre.profiles.get and require('vyre').profiles agree", function()
    assert.are.equal(profiles.get, vyre.cuda.profile)
    assert.are.same(vyre.profiles.get("h100"), vyre.cuda.profile("h100"))
    assert.are.same({ "a100", "blackwell-envelope", "h100", "h200", "reference", "rtx5090" },
      profiles.names())
  end)

  it("every profile has every field with its type", function()
    for _, n in ipairs(profiles.names()) do
      local p = profiles.get(n)
      assert.are.equal(p, profiles.check(p, "spec"))
      assert.are.equal(n, p.name)
      assert.are.equal(p.cc_major * 10 + p.cc_minor, p.sm)
      assert.are.equal(p.max_threads_per_sm // p.warp_size, p.max_warps_per_sm)
      assert.is_true(p.shared_bytes_per_block <= p.shared_bytes_per_block_optin)
      assert.is_true(p.shared_bytes_per_block_optin <= p.shared_bytes_per_sm)
      assert.is_true(p.registers_per_block <= p.registers_per_sm)
      for _, k in ipairs({ "launch_ns", "graph_node_ns", "graph_launch_ns", "readback_ns",
          "barrier_ns", "barrier_full_ns" }) do
        assert.is_number(p.costs[k], n .. " costs." .. k)
      end
      assert.is_string(p.costs.source)
    end
  end)

  it("the published numbers of each part", function()
    local h100, h200 = profiles.get("h100"), profiles.get("h200")
    local a100, b = profiles.get("a100"), profiles.get("rtx5090")
    assert.are.same({ 9, 0, 132, 2048, 32, 65536 }, { h100.cc_major, h100.cc_minor, h100.sms,
      h100.max_threads_per_sm, h100.max_blocks_per_sm, h100.registers_per_sm })
    assert.are.same({ 227 * KiB, 228 * KiB, 50 * MiB, 3350e9 }, { h100.shared_bytes_per_block_optin,
      h100.shared_bytes_per_sm, h100.l2_bytes, h100.memory_bandwidth })
    assert.are.same({ 132, 4800e9, 143771 * MiB, 60 * MiB }, { h200.sms, h200.memory_bandwidth,
      h200.memory_bytes, h200.l2_bytes })
    assert.are.equal(85017493504, h100.memory_bytes)
    assert.are.same({ 8, 0, 108, 164 * KiB, 40 * MiB, 2039e9 }, { a100.cc_major, a100.cc_minor,
      a100.sms, a100.shared_bytes_per_sm, a100.l2_bytes, a100.memory_bandwidth })
    assert.are.same({ 12, 0, 170, 1536, 128 * KiB, 96 * MiB, 32 * 1024 * MiB }, { b.cc_major,
      b.cc_minor, b.sms, b.max_threads_per_sm, b.shared_bytes_per_sm, b.l2_bytes, b.memory_bytes })
    for _, p in ipairs({ h100, h200, a100, b }) do
      assert.is_true(p.cooperative_launch and p.concurrent_kernels and p.tensor_cores)
      assert.are.equal(32, p.warp_size)
      assert.are.equal(1024, p.max_threads_per_block)
    end
  end)

  it("the original's Blackwell envelope as it states it", function()
    local e = profiles.get("blackwell-envelope")
    assert.are.same({ 12, 0, 170, 1024, 2048, 65536, 128 * KiB, 256 * KiB, 96 * MiB,
      32 * 1024 * MiB }, { e.cc_major, e.cc_minor, e.sms, e.max_threads_per_block,
      e.max_threads_per_sm, e.registers_per_sm, e.shared_bytes_per_block_optin,
      e.shared_bytes_per_sm, e.l2_bytes, e.memory_bytes })
    assert.is_true(e.cooperative_launch and e.concurrent_kernels)
  end)

  it("returns a fresh copy each time (callers may edit it)", function()
    local a = profiles.get("h100")
    a.sms, a.costs.launch_ns = 1, 1
    local b = profiles.get("H100") -- names are case-insensitive
    assert.are.equal(132, b.sms)
    assert.are.equal(3500, b.costs.launch_ns)
  end)

  it("unknown names and non-strings are errors with a Fix", function()
    local e = H.error_of(vyre.cuda.profile, "v100")
    assert.truthy(e:find("vyre.cuda.profile: unknown profile 'v100'. Fix: use one of a100, "
      .. "blackwell-envelope, h100", 1, true))
    e = H.error_of(vyre.cuda.profile, 5)
    assert.truthy(e:find("name must be a string (got number). Fix:", 1, true))
  end)

  it("profiles.check names the first bad field", function()
    local p = profiles.get("h100")
    p.sms = "many"
    local e = H.error_of(profiles.check, p, "f")
    assert.truthy(e:find("f: profile.sms must be a number (got string). Fix:", 1, true))
    e = H.error_of(profiles.check, nil, "f")
    assert.truthy(e:find("f: profile must be a table (got nil). Fix:", 1, true))
  end)

  it("the reference backend's profile: one SM, 32-lane subgroups, cooperative", function()
    local be = vyre.backend("reference")
    local p = be:profile()
    profiles.check(p, "spec")
    assert.are.equal("reference", p.name)
    assert.are.same({ 1, 32, 1024, 1, 49152 }, { p.sms, p.warp_size, p.max_threads_per_block,
      p.max_blocks_per_sm, p.shared_bytes_per_sm })
    assert.is_true(p.cooperative_launch)
    assert.is_false(p.concurrent_kernels)
    assert.is_true(math.type(p.memory_bytes) == "integer" and p.memory_bytes >= 0)
    be:free()
    assert.truthy(H.error_of(be.profile, be):find("vyre.Backend:profile: the backend was freed",
      1, true))
  end)
end)

-- Facts for the policy: these defaults, changed by t, where `NIL` removes a field.
local NIL = {}
local function facts(t)
  local f = { steps = 2, layers = 2, cooperative = true, fits = true, converge = true,
    rounds_expected = 1000, profile = profiles.get("h100") }
  for k, v in pairs(t or {}) do
    if v == NIL then f[k] = nil else f[k] = v end
  end
  return f
end

describe("vyre.policy.megakernel (default rule)", function()
  it("is the module's table, also as require('vyre').policy", function()
    assert.are.equal(policy, vyre.policy)
    assert.are.equal(policy.default_megakernel, policy.megakernel)
  end)

  it("many converging rounds on a cooperative device: cooperative", function()
    local c = policy.megakernel(facts({ blocks_per_sm = 2, sms = 132 }))
    assert.are.equal("cooperative", c.mode)
    assert.truthy(c.reason:find("2 steps in 2 layers, 1000 rounds on 2 x 132 co-resident blocks",
      1, true))
    assert.is_true(c.costs.cooperative < c.costs.graph and c.costs.graph < c.costs.split)
  end)

  it("no cooperative launch: graph or host loop, with the reason", function()
    local c = policy.megakernel(facts({ cooperative = false }))
    assert.are.equal("graph", c.mode)
    assert.truthy(c.reason:find("the device has no cooperative launch", 1, true))
    c = policy.megakernel(facts({ fits = false }))
    assert.are.equal("graph", c.mode)
    assert.truthy(c.reason:find("no block of the megakernel can be co-resident", 1, true))
  end)

  it("a single cheap launch is a host loop (a graph's launch costs more than a launch)",
    function()
      local c = policy.megakernel(facts({ cooperative = false, steps = 1, layers = 1,
        converge = false, rounds_expected = NIL, times = 1 }))
      assert.are.equal("split", c.mode)
    end)

  it("heavy rounds at low occupancy leave the persistent kernel", function()
    -- 2 GB per round on the H100 is ~600 us of work: at 10% occupancy the persistent
    -- grid is charged 4x that, more than the launches it saves.
    local c = policy.megakernel(facts({ rounds_expected = 8, bytes_per_round = 2e9,
      occupancy = 0.10 }))
    assert.are.equal("graph", c.mode)
    c = policy.megakernel(facts({ rounds_expected = 8, bytes_per_round = 2e9, occupancy = 0.75 }))
    assert.are.equal("cooperative", c.mode)
  end)

  it("costs follow the documented model", function()
    local f = policy.complete(facts({ blocks_per_sm = 1, bytes_per_round = 0 }))
    local c, r = policy.costs(f)
    assert.are.equal(1000, r)
    -- cooperative: launch + rounds x layers x barrier + one readback
    assert.are.equal(3500 + 1000 * 2 * 1146 + 15000, c.cooperative)
    -- graph: rounds x (graph launch + steps x node + readback)
    assert.are.equal(1000 * (2500 + 2 * 1024) + 1000 * 15000, c.graph)
    -- host: rounds x (steps x launch + readback)
    assert.are.equal(1000 * 2 * 3500 + 1000 * 15000, c.split)
    -- more than one block per SM takes the full-occupancy barrier cost
    local g = policy.complete(facts({ blocks_per_sm = 4 }))
    assert.are.equal(2289, g.barrier_ns)
    -- measured costs in the facts win over the profile's
    local m = policy.complete(facts({ barrier_ns = 777, blocks_per_sm = 4 }))
    assert.are.equal(777, m.barrier_ns)
  end)

  it("a times plan syncs once on every path", function()
    local f = policy.complete(facts({ converge = false, rounds_expected = NIL, times = 10,
      blocks_per_sm = 1 }))
    local c = policy.costs(f)
    assert.are.equal(10 * 2 * 3500 + 15000, c.split)
    assert.are.equal(3500 + 10 * 2 * 1146 + 15000, c.cooperative)
  end)

  it("facts.force picks the mode, but never a cooperative grid that cannot be resident",
    function()
      assert.are.equal("split", policy.megakernel(facts({ force = "split" })).mode)
      assert.are.equal("cooperative", policy.megakernel(facts({ force = "cooperative" })).mode)
      local e = H.error_of(policy.megakernel, facts({ force = "cooperative", fits = false }))
      assert.truthy(e:find("vyre.policy.megakernel: mode 'cooperative' was forced but no block",
        1, true))
      assert.truthy(e:find("Fix:", 1, true))
      e = H.error_of(policy.megakernel, facts({ force = "fast" }))
      assert.truthy(e:find("facts.force must be 'cooperative', 'graph' or 'split'", 1, true))
    end)

  it("rejects malformed facts, naming the field", function()
    local cases = {
      { nil, "facts must be a table (got nil)" },
      { facts({ cooperative = "yes" }), "facts.cooperative must be a boolean (got string)" },
      { facts({ fits = NIL }), "facts.fits must be a boolean (got nil)" },
      { facts({ steps = 0 }), "facts.steps must be an integer >= 1 (got 0)" },
      { facts({ layers = 1.5 }), "facts.layers must be an integer >= 1 (got 1.5)" },
      { facts({ layers = 3 }), "facts.layers (3) exceeds facts.steps (2)" },
      { facts({ rounds_expected = 0 }), "facts.rounds_expected must be an integer >= 1" },
      { facts({ launch_ns = -1 }), "facts.launch_ns must be a number >= 0 (got -1)" },
      { facts({ occupancy = 2 }), "facts.occupancy must be a fraction in [0, 1] (got 2)" },
    }
    for _, c in ipairs(cases) do
      local e = H.error_of(policy.megakernel, c[1])
      assert.truthy(e:find("vyre.policy.megakernel: " .. c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
  end)
end)

describe("vyre.policy.decide and user policies", function()
  after_each(function() policy.megakernel = policy.default_megakernel end)

  it("calls the policy the user installed, with the facts completed", function()
    local seen
    vyre.policy.megakernel = function(f)
      seen = f
      return { mode = "split", reason = "mine" }
    end
    local c = policy.decide(facts())
    assert.are.same({ mode = "split", reason = "mine" }, c)
    assert.are.equal(3500, seen.launch_ns)
    assert.are.equal(1146, seen.barrier_ns)
  end)

  it("fills a missing reason", function()
    vyre.policy.megakernel = function() return { mode = "graph" } end
    assert.are.equal("chosen by a user policy (no reason given)", policy.decide(facts()).reason)
  end)

  it("refuses a cooperative answer the device cannot run (it would hang)", function()
    vyre.policy.megakernel = function() return { mode = "cooperative", reason = "yolo" } end
    local e = H.error_of(policy.decide, facts({ fits = false }))
    assert.truthy(e:find("vyre.policy.decide: vyre.policy.megakernel chose 'cooperative' but no "
      .. "block can be co-resident", 1, true))
    e = H.error_of(policy.decide, facts({ cooperative = false }))
    assert.truthy(e:find("the device has no cooperative launch (the grid barrier", 1, true))
  end)

  it("refuses an answer that is not a mode", function()
    vyre.policy.megakernel = function() return { mode = "warp" } end
    local e = H.error_of(policy.decide, facts())
    assert.truthy(e:find("vyre.policy.decide: vyre.policy.megakernel returned mode warp", 1, true))
    vyre.policy.megakernel = function() return "graph" end
    e = H.error_of(policy.decide, facts())
    assert.truthy(e:find("returned string, not {mode =", 1, true))
  end)

  it("a user policy's own error reaches the caller, named as the policy's", function()
    vyre.policy.megakernel = function() error("my policy: no. Fix: yes", 0) end
    -- issue 26: wrapped with the callback's name and a Fix (spec 83 covers the rest)
    assert.truthy(H.error_of(policy.decide, facts()):find("vyre.policy.decide: "
      .. "vyre.policy.megakernel (a user policy) raised: my policy: no. Fix: yes", 1, true))
  end)
end)

describe("be:profile() on CUDA #gpu", function()
  it("is built from the driver's attributes", function()
    local be = assert(require("vyre.cuda").device(0))
    local p, i = be:profile(), be:info()
    profiles.check(p, "spec")
    assert.are.same({ i.cc_major, i.cc_minor, i.sms, i.warp_size,
      i.max_threads_per_block, i.shared_bytes_per_block, i.shared_bytes_per_block_optin,
      i.l2_bytes, i.memory_bytes, i.cooperative_launch }, { p.cc_major, p.cc_minor, p.sms,
      p.warp_size,
      p.max_threads_per_block, p.shared_bytes_per_block, p.shared_bytes_per_block_optin,
      p.l2_bytes, p.memory_bytes, p.cooperative_launch })
    for _, k in ipairs({ "max_threads_per_sm", "max_blocks_per_sm", "registers_per_sm",
        "registers_per_block", "shared_bytes_per_sm" }) do
      assert.is_true(p[k] > 0, k)
    end
    assert.is_true(p.memory_bandwidth > 1e11)
    -- A Hopper part matches its synthetic profile's per-SM limits.
    if p.cc_major == 9 then
      local h = profiles.get("h100")
      for _, k in ipairs({ "max_threads_per_sm", "max_blocks_per_sm", "registers_per_sm",
          "registers_per_block", "shared_bytes_per_sm", "shared_bytes_per_block_optin", "sms" }) do
        assert.are.equal(h[k], p[k], k)
      end
    end
  end)
end)
