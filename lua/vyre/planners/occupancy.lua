-- vyre.planners.occupancy — theoretical occupancy of a kernel on a device profile, the
-- workgroup size that maximises it, and whether several kernels can share an SM.
--   occ.calc(profile, {workgroup = 256, registers = 32, shared_bytes = 0})
--     -> {workgroup, blocks_per_sm, warps_per_sm, occupancy_bps, occupancy, limiter,
--         zero = nil | code, reason}
--   occ.pick(profile, {registers =, shared_bytes =, candidates = {...}}) -> best | nil, why
--   occ.concurrency(profile, {kernel, ...}) -> {verdict = "concurrent" | "serialize",
--     cause = nil | "device_unsupported" | "kernel_unrunnable" | "warp_residency"
--           | "register_pressure" | "shared_memory", reason}
--   occ.grid(profile, kernel, {sizing = "cooperative" | "bounded", virtual_workgroups,
--            blocks_per_sm}) -> {blocks, blocks_per_sm, sms, sizing, source, occupancy}
-- The rule is the original's (docs/PLANNERS.md §3.1) plus the hardware's cap on resident
-- blocks per SM; register allocation granularity is not modelled (the CUDA backend asks
-- the driver, cuOccupancyMaxActiveBlocksPerMultiprocessor, when it has a device). calc and
-- grid are libvyre's (vyre_plan.h), the functions the CUDA runtime sizes its grids with.
local check = require("vyre.planners.check")
local profiles = require("vyre.profiles")
local core = require("vyre.core")

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

-- The limits of one kernel shape; no argument checks (the callers did them). The rule is
-- libvyre's vyre_occupancy_calc (include/vyre_plan.h), the one the CUDA runtime sizes its
-- grids by where the driver gives no answer of its own.
local function calc(p, wg, regs, shared)
  local r = core.occupancy_calc(p, wg, regs, shared)
  r.registers, r.shared_bytes = regs, shared
  r.occupancy = r.occupancy_bps / 10000
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

local SIZINGS = { cooperative = true, bounded = true }

--- grid(profile, kernel, opts) -> {blocks, blocks_per_sm, sms, sizing, source, occupancy}:
--- the grid the CUDA runtime launches for kernel (calc's fields) under opts.sizing:
--- "cooperative" (a megakernel or grid program's persistent grid: min(virtual_workgroups,
--- blocks/SM x SMs, max grid)) or "bounded" (a launch sized by a worklist, {n = wl}:
--- blocks/SM x SMs, at least one per SM). blocks/SM is opts.blocks_per_sm when given
--- (the driver's answer, k:occupancy() — what the runtime uses on a device), else calc's.
--- The same function as the runtime's (vyre_occupancy_grid), so the answer is its grid.
function M.grid(profile, kernel, opts)
  local fname = "vyre.planners.occupancy.grid"
  profiles.check(profile, fname)
  local regs, shared = kernel_args(kernel, fname)
  opts = opts or {}
  check.table(opts, "opts", fname, "pass {sizing = \"cooperative\", virtual_workgroups = n}")
  local sizing = opts.sizing or "cooperative"
  if not SIZINGS[sizing] then
    check.fail(fname, ("opts.sizing must be \"cooperative\" or \"bounded\" (got %s)"):format(
      tostring(sizing)), "sizing = \"cooperative\" (a grid barrier) or \"bounded\" ({n = wl})")
  end
  local virtual = 0
  if sizing == "cooperative" then
    virtual = check.int(opts, "virtual_workgroups", 0, fname, nil, "opts")
  end
  local occ = calc(profile, workgroup_of(kernel, fname), regs, shared)
  local per_sm, source = occ.blocks_per_sm, "estimate"
  if opts.blocks_per_sm ~= nil then
    per_sm, source = check.int(opts, "blocks_per_sm", 0, fname, nil, "opts"), "driver"
  end
  return { blocks = core.occupancy_grid(profile, sizing, per_sm, virtual), blocks_per_sm = per_sm,
    sms = profile.sms, sizing = sizing, source = source, occupancy = occ }
end

return M
