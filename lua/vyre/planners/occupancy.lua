-- vyre.planners.occupancy — theoretical occupancy of a kernel on a device profile, the
-- workgroup size that maximises it, and whether several kernels can share an SM.
--   occ.calc(profile, {workgroup = 256, registers = 32, shared_bytes = 0})
--     -> {workgroup, blocks_per_sm, warps_per_sm, occupancy_bps, occupancy, limiter,
--         zero = nil | code, reason}
--   occ.pick(profile, {registers =, shared_bytes =, candidates = {...}}) -> best | nil, why
--   occ.concurrency(profile, {kernel, ...}) -> {verdict = "concurrent" | "serialize",
--     cause = nil | "device_unsupported" | "kernel_unrunnable" | "warp_residency"
--           | "register_pressure" | "shared_memory", reason}
-- The rule is the original's (docs/PLANNERS.md §3.1) plus the hardware's cap on resident
-- blocks per SM; register allocation granularity is not modelled (the CUDA backend asks
-- the driver, cuOccupancyMaxActiveBlocksPerMultiprocessor, when it has a device).
local check = require("vyre.planners.check")
local profiles = require("vyre.profiles")

local M = {}

local function workgroup_of(k, fname)
  local wg = k.workgroup
  if type(wg) == "table" then
    local n = 1
    for i = 1, 3 do
      local d = wg[i] or wg[("xyz"):sub(i, i)] or 1
      if math.type(d) ~= "integer" or d < 0 then
        check.fail(fname, ("kernel.workgroup[%d] must be an integer >= 0 (got %s)"):format(i,
          tostring(d)), "workgroup = {256} or {16, 16}", 2)
      end
      n = n * d
    end
    return n
  end
  return check.int(k, "workgroup", 0, fname, nil, "kernel")
end

-- The limits of one kernel shape; no argument checks (the callers did them).
local function calc(p, wg, regs, shared)
  local r = { workgroup = wg, registers = regs, shared_bytes = shared, blocks_per_sm = 0,
    warps_per_sm = 0, occupancy_bps = 0, occupancy = 0 }
  local shared_max = p.shared_bytes_per_block_optin or p.shared_bytes_per_block
  if wg == 0 or wg > p.max_threads_per_block then
    r.zero, r.reason = "workgroup_size", ("workgroup %d is not in 1..%d"):format(wg,
      p.max_threads_per_block)
  elseif regs > p.max_registers_per_thread then
    r.zero, r.reason = "registers_per_thread", ("%d registers per thread exceed %d"):format(regs,
      p.max_registers_per_thread)
  elseif regs * wg > p.registers_per_block then
    r.zero, r.reason = "registers_per_block", ("%d registers x %d threads exceed %d per block")
      :format(regs, wg, p.registers_per_block)
  elseif shared > shared_max then
    r.zero, r.reason = "shared_per_block", ("%d shared bytes exceed %d per block"):format(shared,
      shared_max)
  end
  if r.zero then return r end
  local warps_per_block = (wg + p.warp_size - 1) // p.warp_size
  local max_warps = p.max_threads_per_sm // p.warp_size
  -- The SM allocates whole warps: a block of 100 threads takes 4 warps, so the thread
  -- limit is counted in warps (the original's threads / workgroup would give 20 blocks
  -- of 100 on a 2048-thread SM, 125% occupancy).
  local limits = {
    { "threads", max_warps // warps_per_block },
    { "registers", regs > 0 and p.registers_per_sm // (regs * wg) or math.maxinteger },
    { "shared", shared > 0 and p.shared_bytes_per_sm // shared or math.maxinteger },
    { "blocks", p.max_blocks_per_sm },
  }
  local best = limits[1]
  for i = 2, #limits do
    if limits[i][2] < best[2] then best = limits[i] end
  end
  r.blocks_per_sm = best[2]
  r.limiter = best[1]
  r.warps_per_sm = r.blocks_per_sm * warps_per_block
  r.occupancy_bps = r.warps_per_sm * 10000 // max_warps
  r.occupancy = r.occupancy_bps / 10000
  r.reason = ("%d blocks of %d threads per SM (limited by %s): %d of %d warps"):format(
    r.blocks_per_sm, wg, r.limiter, r.warps_per_sm, max_warps)
  return r
end

local function kernel_args(k, fname)
  check.table(k, "kernel", fname, "pass {workgroup = 256, registers = 32, shared_bytes = 0}")
  local regs = check.int(k, "registers", 0, fname, 0, "kernel")
  local shared = check.int(k, "shared_bytes", 0, fname, 0, "kernel")
  return regs, shared
end

--- calc(profile, kernel) -> the occupancy of kernel (see the file header). A workgroup of
--- 0 or over the device maximum, too many registers or too much shared memory give an
--- occupancy of 0 with `zero` naming the limit; bad arguments raise.
function M.calc(profile, kernel)
  local fname = "vyre.planners.occupancy.calc"
  profiles.check(profile, fname)
  local regs, shared = kernel_args(kernel, fname)
  return calc(profile, workgroup_of(kernel, fname), regs, shared)
end

--- pick(profile, kernel) -> the result of calc for the workgroup size (from
--- kernel.candidates, default every multiple of the warp size up to the device maximum)
--- with the highest occupancy, ties to the smaller workgroup; nil + reason when no
--- candidate can run.
function M.pick(profile, kernel)
  local fname = "vyre.planners.occupancy.pick"
  profiles.check(profile, fname)
  local regs, shared = kernel_args(kernel, fname)
  local cands = kernel.candidates
  if cands == nil then
    cands = {}
    for wg = profile.warp_size, profile.max_threads_per_block, profile.warp_size do
      cands[#cands + 1] = wg
    end
  end
  check.table(cands, "kernel.candidates", fname, "candidates = {64, 128, 256}")
  if #cands == 0 then
    check.fail(fname, "kernel.candidates is empty", "list at least one workgroup size")
  end
  local best, last
  for i, wg in ipairs(cands) do
    if math.type(wg) ~= "integer" or wg < 0 then
      check.fail(fname, ("kernel.candidates[%d] must be an integer >= 0 (got %s)"):format(i,
        tostring(wg)), "candidates = {64, 128, 256}")
    end
    local r = calc(profile, wg, regs, shared)
    last = r
    if r.occupancy_bps > 0 and (not best or r.occupancy_bps > best.occupancy_bps
        or (r.occupancy_bps == best.occupancy_bps and wg < best.workgroup)) then
      best = r
    end
  end
  if not best then
    return nil, ("no candidate workgroup can run: %s"):format(last.reason)
  end
  return best
end

local CAUSES = {
  device_unsupported = true, kernel_unrunnable = true, warp_residency = true,
  register_pressure = true, shared_memory = true,
}
M.CAUSES = CAUSES

--- concurrency(profile, kernels) -> verdict: "concurrent" when the device runs kernels
--- concurrently, each kernel can run, and one block of every kernel fits on one SM
--- together (warps and blocks, registers, shared memory); else "serialize" with the
--- first cause in that order.
function M.concurrency(profile, kernels)
  local fname = "vyre.planners.occupancy.concurrency"
  profiles.check(profile, fname)
  check.table(kernels, "kernels", fname, "pass a list of {workgroup =, registers =, "
    .. "shared_bytes =}")
  if #kernels == 0 then
    check.fail(fname, "kernels is empty", "list the kernels that should run together")
  end
  local function serialize(cause, reason)
    return { verdict = "serialize", cause = cause, reason = reason }
  end
  local occ = {}
  for i, k in ipairs(kernels) do
    local regs, shared = kernel_args(k, fname)
    occ[i] = calc(profile, workgroup_of(k, fname), regs, shared)
  end
  if not profile.concurrent_kernels then
    return serialize("device_unsupported", ("%s does not run kernels concurrently")
      :format(profile.name))
  end
  local warps, regs, shared = 0, 0, 0
  for i, r in ipairs(occ) do
    if r.occupancy_bps == 0 then
      return serialize("kernel_unrunnable", ("kernel %d cannot run: %s"):format(i, r.reason))
    end
    warps = warps + (r.workgroup + profile.warp_size - 1) // profile.warp_size
    regs = regs + r.registers * r.workgroup
    shared = shared + r.shared_bytes
  end
  if warps > profile.max_warps_per_sm or #occ > profile.max_blocks_per_sm then
    return serialize("warp_residency", ("one block each needs %d warps in %d blocks; an SM "
      .. "holds %d warps, %d blocks"):format(warps, #occ, profile.max_warps_per_sm,
        profile.max_blocks_per_sm))
  end
  if regs > profile.registers_per_sm then
    return serialize("register_pressure", ("one block each needs %d registers; an SM has %d")
      :format(regs, profile.registers_per_sm))
  end
  if shared > profile.shared_bytes_per_sm then
    return serialize("shared_memory", ("one block each needs %d shared bytes; an SM has %d")
      :format(shared, profile.shared_bytes_per_sm))
  end
  return { verdict = "concurrent", reason = ("one block of each of the %d kernels fits on one "
    .. "SM: %d warps, %d registers, %d shared bytes"):format(#occ, warps, regs, shared) }
end

return M
