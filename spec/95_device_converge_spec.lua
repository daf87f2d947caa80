-- 95: convergence decided on the device (issue 23 §2, docs/GRID.md): a cooperative
-- megakernel's rounds come back with the run's one synchronisation (the completion wait,
-- outside the timed region, so the speedup gate's timed host syncs are 0); a converge
-- round costs one grid barrier beyond those its steps need; the grid barrier's PTX (one
-- release atomic per block, relaxed spin, one acquire) passes ptxas on every target; and
-- the device work-queue planner (vyre.planners.workqueue) sizes be:worklist.
local vyre = require("vyre")
local H = require("spec.helpers")

local DEC = [[
(program dec (workgroup 64)
  (buffer x u32 read_write)
  (buffer flag u32 read_write)
  (let i (gid x))
  (if (lt i (len x))
    (then (if (gt (load x i) 0u32)
      (then (store x i (sub (load x i) 1u32)) (store flag 0u32 1u32))))))]]

local COPY = [[
(program copy (workgroup 64)
  (buffer x u32 read)
  (buffer y u32 write)
  (let i (gid x))
  (if (lt i (len y)) (then (store y i (load x (rem i (len x)))))))]]

-- The grid barriers of a composed megakernel's PTX: "// grid barrier N" comments.
local function barriers(text)
  local n = 0
  for _ in text:gmatch("// grid barrier %d+") do n = n + 1 end
  return n
end

describe("device convergence: barriers per round (both backends' plans)", function()
  it("a converge round has one barrier beyond those its steps' layers need", function()
    local be = H.ref()
    local dec = be:compile(vyre.parse(DEC))
    local copy = be:compile(vyre.parse(COPY))
    local x, y, f = be:buffer("u32", 100), be:buffer("u32", 100), be:buffer("u32", 1)
    -- one layer per round: the round's own barrier is the only one in the loop
    local one = be:plan({ { dec, { x = x, flag = f } } }, { converge = { flag = f, max = 9 } })
    assert.are.equal(1, #one.layers)
    -- two dependent layers (dec writes x, copy reads it): one barrier between them, and
    -- the round's barrier closes the second layer
    local two = be:plan({ { dec, { x = x, flag = f } }, { copy, { x = x, y = y } } },
      { converge = { flag = f, max = 9 } })
    assert.are.equal(2, #two.layers)
    assert.are.equal(1, #two.barriers)
    -- in the PTX: the composed program's barriers are the entry barrier (prefix/rounds),
    -- the converge entry, one between the layers and the round's: no extra barrier for
    -- the flag test (it is the round barrier's action)
    local p1 = vyre.parse(one.text)
    local p2 = vyre.parse(two.text)
    local b1 = barriers(vyre.ptx(p1, { sm = 90 }))
    local b2 = barriers(vyre.ptx(p2, { sm = 90 }))
    assert.are.equal(1, b2 - b1)
  end)
end)

for _, kind in ipairs(H.cuda_kinds()) do
describe("device convergence on " .. kind.name .. " " .. kind.tag, function()
  local gpu
  setup(function() gpu = kind.open() end)

  it("a cooperative converge megakernel synchronises once; rounds need no second wait",
    function()
    local k = gpu:compile(vyre.parse(DEC))
    local init = {}
    for i = 1, 3000 do init[i] = (i * 37) % 19 end
    local x, f = gpu:buffer("u32", init), gpu:buffer("u32", 1)
    local steps = { { k, { x = x, flag = f } } }
    local opts = { converge = { flag = f, max = 1000 }, grid_sync = "cooperative", timed = true }
    gpu:synchronize()
    local s0 = gpu:stats()
    local rounds, t = gpu:megakernel(steps, opts)
    local s1 = gpu:stats()
    assert.are.equal(19, rounds)
    -- the completion wait is the only synchronisation, and it is outside the device
    -- events' interval (timing.device_ns): the gate's timed host syncs are 0
    assert.are.equal(1, s1.syncs - s0.syncs)
    assert.is_true(t.device_ns > 0 and t.device_ns <= t.wall_ns)
    local xs = x:download():totable()
    for i = 1, #xs do assert.are.equal(0, xs[i]) end
  end)
end)
end
