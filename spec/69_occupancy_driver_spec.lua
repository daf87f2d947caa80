-- 69: the occupancy estimator (vyre.planners.occupancy) checked against the driver's
-- cuOccupancyMaxActiveBlocksPerMultiprocessor through k:occupancy() (its first result,
-- at the kernel's workgroup): on the fake driver (#fakecuda) and on a GPU
-- (#gpu: compiled kernels limited by threads, by the block cap and by shared memory;
-- where registers or shared memory limit, the estimator, which models neither the
-- register allocation granularity nor the driver's reserved shared memory per block,
-- may only be optimistic). On the reference k:occupancy() reports 0.
local vyre = require("vyre")
local H = require("spec.helpers")
local occ = vyre.planners.occupancy

local KERNELS = {
  { "inc64", H.INC:gsub("%(workgroup %d+%)", "(workgroup 64)") },
  { "inc256", H.INC:gsub("%(workgroup %d+%)", "(workgroup 256)") },
  { "inc1024", H.INC:gsub("%(workgroup %d+%)", "(workgroup 1024)") },
  { "wide32", H.INC:gsub("%(workgroup %d+%)", "(workgroup 32)") },
  { "shared40k", [[
(program shared40k (workgroup 128)
  (buffer o u32 read_write)
  (shared s u32 10240)
  (let i (lid x))
  (store s i (gid x))
  (barrier)
  (if (lt (gid x) (len o)) (then (store o (gid x) (load s (sub 127u32 i))))))]] },
  { "shared24k", [[
(program shared24k (workgroup 256)
  (buffer o u32 read_write)
  (shared s u32 6144)
  (let i (lid x))
  (store s i (gid x))
  (barrier)
  (if (lt (gid x) (len o)) (then (store o (gid x) (load s (sub 255u32 i))))))]] },
}

describe("k:occupancy on the reference", function()
  it("reports no driver occupancy (0) and the reference mode", function()
    local be = vyre.backend("reference")
    local k = be:compile(vyre.parse(H.INC))
    local per_sm, coop, mode, blocks = k:occupancy()
    assert.are.same({ 0, false, "reference", 0 }, { per_sm, coop, mode, blocks })
  end)
end)

describe("k:occupancy on the fake driver #fakecuda", function()
  local F = require("tests.fakecuda.harness")
  local available, why = F.available()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  it("asks the driver at the kernel's workgroup", function()
    local be = F.device()
    for _, kd in ipairs({ KERNELS[1], KERNELS[2], KERNELS[3] }) do
      F.register(kd[2])
      local k = be:compile(vyre.parse(kd[2]))
      local info = k:info()
      local wg = info.workgroup[1] * info.workgroup[2] * info.workgroup[3]
      -- The fake answers 2048 / block, at most 32; the estimator agrees on its profile.
      local driver = k:occupancy()
      assert.are.equal(math.min(32, 2048 // wg), driver, kd[1])
      F.control("set occupancy 3")
      assert.are.equal(3, (k:occupancy()))
      F.control("set occupancy 0")
      k:free()
    end
  end)
end)

describe("occupancy estimator against the driver #gpu", function()
  it("agrees with cuOccupancyMaxActiveBlocksPerMultiprocessor on compiled kernels", function()
    local be = assert(require("vyre.cuda").device(0))
    local prof = be:profile()
    local rows = { ("%-10s %5s %5s %7s %6s %6s %-9s"):format("kernel", "block", "regs",
      "shared", "driver", "model", "limiter") }
    local exact = 0
    for _, kd in ipairs(KERNELS) do
      local k = be:compile(vyre.parse(kd[2]))
      local info = k:info()
      local wg = info.workgroup[1] * info.workgroup[2] * info.workgroup[3]
      local driver = k:occupancy()
      local est = occ.calc(prof, { workgroup = wg, registers = info.registers,
        shared_bytes = info.shared_bytes })
      rows[#rows + 1] = ("%-10s %5d %5d %7d %6d %6d %-9s"):format(kd[1], wg, info.registers,
        info.shared_bytes, driver, est.blocks_per_sm, tostring(est.limiter or est.zero))
      if est.limiter == "threads" or est.limiter == "blocks" then
        assert.are.equal(driver, est.blocks_per_sm, kd[1])
        exact = exact + 1
      else
        assert.is_true(est.blocks_per_sm >= driver, kd[1])
        assert.is_true(driver >= 1, kd[1])
      end
    end
    print("\n" .. table.concat(rows, "\n"))
    assert.is_true(exact >= 4)
  end)
end)
