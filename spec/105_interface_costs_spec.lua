-- Spec 102: be:sequence, be:graph and be:megakernel run through the backend interface
-- (vyre_backend_sequence, vyre_backend_graph_*, vyre_backend_grid_run) at the cost they
-- had when the binding called the CUDA runtime directly: the fake driver's counters of
-- host syncs, launches and graph launches per call are pinned at the numbers this same
-- script measured on the tree before the move (commit 0a53520: equal in every case). And
-- the grid sync mode is the backend object's own, passed to each run: another backend
-- object on the same device keeps its mode, and opts.grid_sync of one megakernel leaves
-- the backend's as it is.
local vyre = require("vyre")
local F = require("tests.fakecuda.harness")

local available, why = F.available()

local SCALE = [[
(program cost_scale (workgroup 64)
  (buffer v u32 read_write)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i (mul (load v i) 2u32)))))]]

local COUNT_BODY = [[
    (let i (gid x))
    (if (lt i (len x))
      (then
        (if (gt (load x i) 0u32)
          (then
            (store x i (sub (load x i) 1u32))
            (store flag 0u32 1u32)))))]]
-- a grid program (its own converge loop) and the plain step a megakernel loops over
local COUNTDOWN = "(program cost_count (workgroup 32) (buffer x u32 read_write)"
  .. " (buffer flag u32 read_write) (param max u32)\n  (converge flag max\n" .. COUNT_BODY .. "))"
local STEP = "(program cost_step (workgroup 32) (buffer x u32 read_write)"
  .. " (buffer flag u32 read_write)\n" .. COUNT_BODY .. ")"

-- What one call costs on the device: the change of each counter across fn().
local function cost(be, fn)
  local s0 = be:stats()
  local r = { fn() }
  local s1 = be:stats()
  return {
    syncs = s1.syncs - s0.syncs,
    launches = s1.launches - s0.launches,
    graph_launches = s1.graph_launches - s0.graph_launches,
  }, table.unpack(r)
end

describe("interface paths cost what the direct calls did, on the fake driver #fakecuda", function()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  local ref, be

  setup(function()
    ref = vyre.backend("reference")
    be = F.device()
    for _, text in ipairs({ F.INC, SCALE, COUNTDOWN, STEP }) do assert(F.register(text)) end
  end)

  teardown(function()
    be:grid_sync("auto")
    be = nil
    collectgarbage()
    collectgarbage()
    F.device():trim()
  end)

  it("a sequence: its launches and one sync, readback included", function()
    local inc = be:compile(vyre.parse(F.INC))
    local sc = be:compile(vyre.parse(SCALE))
    local v = be:buffer("u32", 100)
    local steps = { { sc, { v = v } }, { inc, { v = v } }, { inc, { v = v }, { n = 0 } } }
    local c, out = cost(be, function()
      return be:sequence(steps, { prefix = 1, times = 3, readback = { { v, 2, 4 } } })
    end)
    assert.are.same({ syncs = 1, launches = 4, graph_launches = 0 }, c)
    assert.are.same({ 3, 3, 3, 3 }, out[1]:totable())
    local rsteps = {}
    local rv = ref:buffer("u32", 100)
    local rinc, rsc = ref:compile(vyre.parse(F.INC)), ref:compile(vyre.parse(SCALE))
    rsteps[1], rsteps[2] = { rsc, { v = rv } }, { rinc, { v = rv } }
    local want = ref:sequence(rsteps, { prefix = 1, times = 3, readback = { { rv, 2, 4 } } })
    assert.are.same(want[1]:totable(), out[1]:totable())
  end)

  it("a graph replay: one graph launch per time, one sync per call", function()
    local inc = be:compile(vyre.parse(F.INC))
    local v = be:buffer("u32", 64)
    local g = be:graph({ { inc, { v = v } }, { inc, { v = v } } })
    local c = cost(be, function() return g:launch(5) end)
    assert.are.same({ syncs = 1, launches = 10, graph_launches = 5 }, c)
    assert.are.equal(10, v:download():totable()[7])
    -- a graph whose steps all launch nothing replays nothing: no sync
    local empty = be:graph({ { inc, { v = v }, { n = 0 } } })
    c = cost(be, function() return empty:launch(3) end)
    assert.are.same({ syncs = 0, launches = 0, graph_launches = 0 }, c)
    g:free()
    empty:free()
  end)

  it("a converge megakernel in split mode: rounds as the reference, same syncs", function()
    local p = vyre.parse(STEP)
    local function run(b)
      local k = b:compile(p)
      local x, flag = b:buffer("u32", { 3, 0, 1, 5, 2, 0, 4, 1 }), b:buffer("u32", { 7 })
      return b:megakernel({ { k, { x = x, flag = flag } } },
        { converge = { flag = flag, max = 100 }, grid_sync = "split" }), x
    end
    local wr, wx = run(ref)
    local c, rounds, x = cost(be, function() return run(be) end)
    assert.are.equal(wr, rounds)
    assert.are.same(wx:download():totable(), x:download():totable())
    -- a section launch per round, a flag readback per round and the run's final sync
    assert.are.same({ syncs = 7, launches = 6, graph_launches = 0 }, c)
  end)

  it("keeps the grid sync mode per backend object and passes it to each run", function()
    local other = assert(require("vyre.core").cuda_open(0)) -- not the cached one
    assert.are.equal("auto", be:grid_sync("split"))
    assert.are.equal("auto", other:grid_sync()) -- the same device, its own mode
    local p = vyre.parse(COUNTDOWN)
    local args = { x = { 2, 0, 1, 0 }, flag = { 1 }, max = 10 }
    local _, wr = ref:run(p, args)
    local k = be:compile(p)
    local x, flag = be:buffer("u32", args.x), be:buffer("u32", args.flag)
    k:launch({ x = x, flag = flag, max = 10 })
    be:synchronize()
    assert.are.equal("split", select(3, k:occupancy()))
    assert.are.equal(wr, k:rounds())
    -- a megakernel's own opts.grid_sync is for that run only
    local s = be:compile(vyre.parse(STEP))
    local g0 = be:stats().graph_launches
    local rounds = be:megakernel({ { s, { x = x, flag = flag } } },
      { converge = { flag = flag, max = 10 }, grid_sync = "graph" })
    assert.are.equal(rounds, be:stats().graph_launches - g0) -- it ran as graph rounds
    assert.are.equal("split", be:grid_sync())
    assert.are.equal("auto", other:grid_sync())
    be:grid_sync("auto")
    other:free()
  end)
end)

describe("the grid sync mode on the reference", function()
  it("is recorded per backend object and refused when unknown, with a Fix", function()
    local a, b = vyre.backend("reference"), vyre.reference.new()
    assert.are.equal("auto", a:grid_sync("graph"))
    assert.are.equal("graph", a:grid_sync())
    assert.are.equal("auto", b:grid_sync())
    local ok, e = pcall(a.grid_sync, a, "host_loop")
    assert.is_false(ok)
    assert.truthy(tostring(e):find("Fix:", 1, true))
    assert.are.equal("graph", a:grid_sync("auto"))
  end)
end)
