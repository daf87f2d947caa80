-- 36: vyre.planners.occupancy (occupancy, workgroup pick, concurrency verdict) and
-- vyre.planners.capability (kernel capability diagnostics and their verdict line), on
-- the synthetic profiles: every rule, every zero case, every cause and every error.
local vyre = require("vyre")
local H = require("spec.helpers")
local occ = vyre.planners.occupancy
local cap = vyre.planners.capability
local P = vyre.cuda.profile

local KiB = 1024

describe("occupancy.calc", function()
  local h100 = P("h100")

  it("threads bound: 8 blocks of 256 fill the 64 warps of an H100 SM", function()
    local r = occ.calc(h100, { workgroup = 256, registers = 32 })
    assert.are.same({ 8, 64, 10000, 1.0, "threads" }, { r.blocks_per_sm, r.warps_per_sm,
      r.occupancy_bps, r.occupancy, r.limiter })
    assert.is_nil(r.zero)
  end)

  it("registers bound: 64 registers x 256 threads leave 4 blocks (50%)", function()
    local r = occ.calc(h100, { workgroup = 256, registers = 64 })
    assert.are.same({ 4, 32, 5000, "registers" }, { r.blocks_per_sm, r.warps_per_sm,
      r.occupancy_bps, r.limiter })
  end)

  it("shared-memory bound: 48 KiB per block leaves 4 of 228 KiB", function()
    local r = occ.calc(h100, { workgroup = 128, shared_bytes = 48 * KiB })
    assert.are.same({ 4, 16, 2500, "shared" }, { r.blocks_per_sm, r.warps_per_sm,
      r.occupancy_bps, r.limiter })
  end)

  it("resident-block cap: 32 blocks of one warp are half the SM", function()
    local r = occ.calc(h100, { workgroup = 32 })
    assert.are.same({ 32, 32, 5000, "blocks" }, { r.blocks_per_sm, r.warps_per_sm,
      r.occupancy_bps, r.limiter })
  end)

  it("a workgroup that is not a warp multiple is counted in whole warps", function()
    -- 100 threads take 4 warps: 16 blocks fill 64 warps (not 2048 / 100 = 20 blocks).
    local r = occ.calc(h100, { workgroup = 100 })
    assert.are.same({ 16, 64, 10000 }, { r.blocks_per_sm, r.warps_per_sm, r.occupancy_bps })
  end)

  it("workgroup as {x, y, z}", function()
    assert.are.equal(10000, occ.calc(h100, { workgroup = { 16, 16 } }).occupancy_bps)
    assert.are.equal(256, occ.calc(h100, { workgroup = { x = 8, y = 8, z = 4 } }).workgroup)
  end)

  it("the published RTX 5090 and the original's envelope differ at 1024 threads", function()
    assert.are.equal(6666, occ.calc(P("rtx5090"), { workgroup = 1024 }).occupancy_bps)
    assert.are.equal(10000, occ.calc(P("blackwell-envelope"), { workgroup = 1024 }).occupancy_bps)
  end)

  it("zero occupancy, naming the limit", function()
    local cases = {
      { { workgroup = 0 }, "workgroup_size" },
      { { workgroup = 2048 }, "workgroup_size" },
      { { workgroup = 32, registers = 256 }, "registers_per_thread" },
      { { workgroup = 1024, registers = 255 }, "registers_per_block" },
      { { workgroup = 64, shared_bytes = 228 * KiB }, "shared_per_block" },
    }
    for _, c in ipairs(cases) do
      local r = occ.calc(h100, c[1])
      assert.are.equal(0, r.occupancy_bps)
      assert.are.equal(0, r.blocks_per_sm)
      assert.are.equal(c[2], r.zero)
      assert.is_string(r.reason)
    end
  end)

  it("bad arguments are errors with a Fix", function()
    local cases = {
      { { workgroup = -1 }, "kernel.workgroup must be an integer >= 0 (got -1)" },
      { { workgroup = 1.5 }, "kernel.workgroup must be an integer >= 0 (got 1.5)" },
      { { workgroup = 64, registers = "many" }, "kernel.registers must be an integer >= 0" },
      { { workgroup = 64, shared_bytes = -4 }, "kernel.shared_bytes must be an integer >= 0" },
      { { workgroup = { 8, -1 } }, "kernel.workgroup[2] must be an integer >= 0 (got -1)" },
    }
    for _, c in ipairs(cases) do
      local e = H.error_of(occ.calc, h100, c[1])
      assert.truthy(e:find("vyre.planners.occupancy.calc: " .. c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
    assert.truthy(H.error_of(occ.calc, h100, nil):find("kernel must be a table (got nil)", 1, true))
    assert.truthy(H.error_of(occ.calc, {}, { workgroup = 1 }):find(
      "vyre.planners.occupancy.calc: profile.cc_major must be a number", 1, true))
  end)
end)

describe("occupancy.pick", function()
  local h100 = P("h100")

  it("the highest occupancy, ties to the smaller workgroup", function()
    -- 64 registers cap every size at 32 warps: the smallest candidate wins the tie.
    assert.are.equal(32, occ.pick(h100, { registers = 64 }).workgroup)
    -- with 40 KiB of shared memory per block, 256 threads is the smallest that reaches 50%
    local r = occ.pick(h100, { registers = 64, shared_bytes = 40 * KiB })
    assert.are.same({ 256, 5000 }, { r.workgroup, r.occupancy_bps })
  end)

  it("agrees with a brute force over the candidates", function()
    for _, regs in ipairs({ 0, 24, 40, 72, 128 }) do
      for _, sh in ipairs({ 0, 6 * KiB, 33 * KiB, 100 * KiB }) do
        local best
        for wg = 32, 1024, 32 do
          local r = occ.calc(h100, { workgroup = wg, registers = regs, shared_bytes = sh })
          if r.occupancy_bps > 0 and (not best or r.occupancy_bps > best.occupancy_bps) then
            best = r
          end
        end
        local got = occ.pick(h100, { registers = regs, shared_bytes = sh })
        assert.are.equal(best.workgroup, got.workgroup, ("regs %d shared %d"):format(regs, sh))
      end
    end
  end)

  it("explicit candidates", function()
    assert.are.equal(96, occ.pick(h100, { registers = 80, candidates = { 96, 1000 } }).workgroup)
  end)

  it("nil and the reason when nothing can run", function()
    local r, why = occ.pick(h100, { shared_bytes = 300 * KiB })
    assert.is_nil(r)
    assert.truthy(why:find("no candidate workgroup can run: ", 1, true))
  end)

  it("bad candidates are errors", function()
    local e = H.error_of(occ.pick, h100, { candidates = {} })
    assert.truthy(e:find("vyre.planners.occupancy.pick: kernel.candidates is empty. Fix:", 1, true))
    e = H.error_of(occ.pick, h100, { candidates = { 64, "x" } })
    assert.truthy(e:find("kernel.candidates[2] must be an integer >= 0 (got x)", 1, true))
  end)
end)

describe("occupancy.concurrency", function()
  local h100 = P("h100")

  it("concurrent when one block of each fits on an SM", function()
    local v = occ.concurrency(h100, { { workgroup = 256, registers = 32 },
      { workgroup = 512, registers = 32, shared_bytes = 16 * KiB } })
    assert.are.equal("concurrent", v.verdict)
    assert.is_nil(v.cause)
  end)

  it("each serialize cause, in order", function()
    local cases = {
      { P("reference"), { { workgroup = 64 } }, "device_unsupported" },
      { h100, { { workgroup = 64 }, { workgroup = 0 } }, "kernel_unrunnable" },
      { h100, { { workgroup = 1024 }, { workgroup = 1024 }, { workgroup = 64 } },
        "warp_residency" },
      { h100, { { workgroup = 512, registers = 128 }, { workgroup = 32, registers = 8 } },
        "register_pressure" },
      { h100, { { workgroup = 64, shared_bytes = 150 * KiB },
        { workgroup = 64, shared_bytes = 100 * KiB } }, "shared_memory" },
    }
    for _, c in ipairs(cases) do
      local v = occ.concurrency(c[1], c[2])
      assert.are.equal("serialize", v.verdict)
      assert.are.equal(c[3], v.cause)
      assert.is_true(occ.CAUSES[v.cause])
      assert.is_string(v.reason)
    end
  end)

  it("errors", function()
    assert.truthy(H.error_of(occ.concurrency, h100, {}):find(
      "vyre.planners.occupancy.concurrency: kernels is empty. Fix:", 1, true))
    assert.truthy(H.error_of(occ.concurrency, h100, 3):find("kernels must be a table", 1, true))
  end)
end)

describe("capability.check", function()
  local h100 = P("h100")

  it("ok: the verdict line", function()
    local v = cap.check(h100, { kernel = "bfs", min_sm = "9.0", threads_per_block = 1024,
      shared_bytes = 200 * KiB, cooperative = true, tensor_cores = true })
    assert.are.equal("ok", v.status)
    assert.are.same({}, v.failures)
    assert.are.equal("cuda-kernel-capability-v1|kernel=bfs|status=ok", v.line)
  end)

  it("blocked: the original's example line", function()
    local t = P("h100")
    t.cc_major, t.cc_minor = 7, 5
    local v = cap.check(t, { kernel = "k", min_sm = "8.0", threads_per_block = 2048 })
    assert.are.equal("blocked", v.status)
    assert.are.equal("cuda-kernel-capability-v1|kernel=k|status=blocked|fix=sm_version("
      .. "required=8.0,actual=7.5),threads_per_block(requested=2048,max=1024)", v.line)
  end)

  it("every failure, in the fixed order", function()
    local v = cap.check(P("reference"), { kernel = "all", min_sm = { 9, 0 },
      block = { 64, 32 }, shared_bytes = 64 * KiB, cooperative = true, tensor_cores = true })
    local codes = {}
    for i, f in ipairs(v.failures) do codes[i] = f.code end
    -- the reference backend is cooperative (its grid barrier is exact): four failures
    assert.are.same({ "sm_version", "threads_per_block", "shared_memory", "tensor_cores" }, codes)
    assert.are.equal("cuda-kernel-capability-v1|kernel=all|status=blocked|fix=sm_version("
      .. "required=9.0,actual=0.0),threads_per_block(requested=2048,max=1024),shared_memory("
      .. "requested=65536,max=49152),tensor_cores(required=true,actual=false)", v.line)
    local t = P("a100")
    t.cooperative_launch = false
    v = cap.check(t, { kernel = "c", cooperative = true })
    assert.are.equal("cuda-kernel-capability-v1|kernel=c|status=blocked|fix=cooperative_launch("
      .. "required=true,actual=false)", v.line)
  end)

  it("min_sm as \"8.6\", 86, {8, 6} or 8.6", function()
    local t = P("a100")
    for _, s in ipairs({ "8.6", 86, { 8, 6 }, 8.6 }) do
      local v = cap.check(t, { kernel = "k", min_sm = s })
      assert.are.equal("sm_version(required=8.6,actual=8.0)", v.line:match("fix=(.*)$"))
    end
  end)

  it("bad requirements are errors", function()
    local cases = {
      { { kernel = "a|b" }, "requirements.kernel must be a non-empty name without" },
      { { kernel = "" }, "requirements.kernel must be a non-empty name" },
      { { kernel = "k", min_sm = "eight" }, "requirements.min_sm must be a compute capability" },
      { { kernel = "k", threads_per_block = 0 }, "requirements.threads_per_block must be an "
        .. "integer >= 1 (got 0)" },
      { { kernel = "k", block = { 0 } }, "requirements.block[1] must be an integer >= 1" },
      { { kernel = "k", cooperative = 1 }, "requirements.cooperative must be a boolean" },
    }
    for _, c in ipairs(cases) do
      local e = H.error_of(cap.check, h100, c[1])
      assert.truthy(e:find("vyre.planners.capability.check: " .. c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
  end)

  it("requirements of a vyre Program: workgroup, shared bytes, the lowest target", function()
    local p = H.parse([[
(program tile (workgroup 16 16)
  (buffer v f32 read_write)
  (shared a f32 256)
  (shared b u64 32)
  (store a (lid x) 0x0p+0f32)
  (barrier)
  (store v (gid x) (load a (lid x))))]], "tile")
    local r = cap.requirements(p, { cooperative = true })
    assert.are.same({ kernel = "tile", block = { 16, 16, 1 }, shared_bytes = 256 * 4 + 32 * 8,
      min_sm = "7.0", cooperative = true, tensor_cores = false }, r)
    assert.are.equal("ok", cap.check(P("h100"), r).status)
    assert.truthy(H.error_of(cap.requirements, "text"):find(
      "vyre.planners.capability.requirements: program must be a vyre.Program", 1, true))
  end)
end)
