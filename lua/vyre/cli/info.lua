-- vyre info — whether CUDA is usable here (and why not), each device's capabilities and
-- the disk cubin cache (location, size, cap).
local vyre = require("vyre")
local C = require("vyre.cli.common")

local M = {
  name = "info",
  summary = "CUDA availability, device capabilities and the disk cubin cache",
}

M.help = [==[
usage: vyre info

Says whether CUDA is usable on this machine and, when it is not, why; lists every
device with its capabilities (SM, SMs, memory, L2, limits, clocks); names
the backend vyre.backend() picks; and shows the disk cubin cache (directory, files,
bytes, cap). Needs no GPU. Exit status 0 (1 only if vyre itself cannot load).]==]

local function human(bytes)
  local units = { "B", "KiB", "MiB", "GiB", "TiB" }
  local v, u = bytes, 1
  while v >= 1024 and u < #units do v, u = v / 1024, u + 1 end
  return u == 1 and string.format("%d B", bytes) or string.format("%.1f %s", v, units[u])
end
M.human = human

local function devices(ctx, cuda)
  for i = 0, (cuda.count() or 1) - 1 do
    local be, err = cuda.device(i)
    if not be then
      ctx.out(("  device %d: cannot open: %s\n"):format(i, err))
    else
      local d = be:info()
      ctx.out(("  device %d: %s, sm_%d, %d SMs, %s memory, L2 %s\n"):format(i, d.name, d.sm,
        d.sms, human(d.memory_bytes), human(d.l2_bytes)))
      ctx.out(("    PTX target %s (ISA %s): %s\n"):format(d.target, d.target_isa, d.target_reason))
      if d.fake then
        ctx.out("    fake driver (tests/fakecuda): kernels run on the reference interpreter on "
          .. "the CPU; not a GPU\n")
      end
      ctx.out(("    max threads/block %d, block %d x %d x %d, grid %d x %d x %d\n"):format(
        d.max_threads_per_block, d.max_block[1], d.max_block[2], d.max_block[3],
        d.max_grid[1], d.max_grid[2], d.max_grid[3]))
      ctx.out(("    shared/block %s (opt-in %s), warp %d, cooperative launch %s\n"):format(
        human(d.shared_bytes_per_block), human(d.shared_bytes_per_block_optin), d.warp_size,
        d.cooperative_launch and "yes" or "no"))
      ctx.out(("    clocks: SM %d MHz, memory %d MHz, bus %d bits\n"):format(d.clock_khz // 1000,
        d.memory_clock_khz // 1000, d.memory_bus_bits))
    end
  end
end

function M.run(argv, ctx)
  ctx = C.context(ctx)
  local opts, pos = C.parse_options(argv, {})
  if not opts then return C.usage_error(ctx, "info", pos) end
  if opts.help then
    ctx.out(M.help .. "\n")
    return C.OK
  end
  if #pos > 0 then return C.usage_error(ctx, "info", "unexpected argument '" .. pos[1] .. "'") end
  ctx.out("vyre " .. tostring(vyre.version) .. "\n")
  local ok, cuda = pcall(require, "vyre.cuda")
  if not ok then
    ctx.out("CUDA: not usable: vyre.cuda failed to load: " .. tostring(cuda) .. "\n")
    return C.OK
  end
  local avail, why = cuda.available()
  if not avail then
    ctx.out("CUDA: not usable: " .. tostring(why) .. "\n")
    ctx.out("backend: reference (CPU interpreter)\n")
  else
    local dv = cuda.driver_version()
    -- the fake driver of tests/fakecuda (CI) names itself in be:info().fake
    local okd, d0 = pcall(cuda.device, 0)
    local fake = okd and d0 and d0:info().fake
    ctx.out(("CUDA: usable (driver API %d.%d%s), %d device(s)\n"):format(dv // 1000,
      (dv % 1000) // 10, fake and ", the fake driver of tests/fakecuda" or "", cuda.count() or 0))
    devices(ctx, cuda)
    -- vyre.backend() takes device 0, or the reference when it cannot open (below sm_70)
    ctx.out(cuda.device(0) and "backend: cuda\n" or "backend: reference (CPU interpreter)\n")
  end
  local c = cuda.cache()
  ctx.out(("cubin cache: %s (%d files, %s of %s cap)\n"):format(c.dir or "(no location: set "
    .. "VYRE_CACHE_DIR or HOME)", c.files, human(c.bytes), human(c.cap)))
  return C.OK
end

return M
