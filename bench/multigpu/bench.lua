-- bench/multigpu/bench.lua — the vyre side of docs/MULTIGPU.md §7 on the GPUs of this
-- machine: all_reduce bus bandwidth (f32, in place, one process driving N GPUs) from
-- 1 MiB to --max bytes, peer copy GB/s (buf:copy_to, device 0 -> 1), and the sum of
-- --sum bytes per GPU with lib.reduce over the group vs one GPU. Prints markdown rows;
-- the baselines are torch_allreduce.py (torch.distributed, NCCL) and vyre_bench_peer
-- (cuMemcpyPeerAsync in C), run on the same machine in the same session (run.sh).
--   lua5.4 bench/multigpu/bench.lua [--gpus N] [--max BYTES] [--iters K] [--sum BYTES]
local vyre = require("vyre")
local core = require("vyre.core")

local opts = { gpus = nil, max = 1 << 30, iters = 20, sum = 4 << 30 }
local i = 1
while i <= #arg do
  local k, v = arg[i]:match("^%-%-(%w+)$"), arg[i + 1]
  local allowed = { gpus = true, max = true, iters = true, sum = true }
  if not k or not allowed[k] or not math.tointeger(tonumber(v)) then
    io.stderr:write("usage: bench.lua [--gpus N] [--max BYTES] [--iters K] [--sum BYTES]\n")
    os.exit(2)
  end
  opts[k] = math.tointeger(tonumber(v))
  i = i + 2
end

local cuda = vyre.cuda
local count = cuda.count() or 0
local n = math.min(opts.gpus or count, count)
local nccl, why = cuda.nccl()
if n < 2 or not nccl then
  print("bench/multigpu: needs NCCL and 2 or more GPUs: " .. tostring(nccl and count or why))
  os.exit(2)
end
local ords = {}
for r = 1, n do ords[r] = r - 1 end
local g = cuda.group(ords)
local info = g.backends[1]:info()
print(("# %d x %s, driver %d, NCCL %s (%s), %s"):format(n, info.name, info.driver_version,
  nccl.version_string, nccl.path, os.date("!%Y-%m-%d %H:%M UTC")))

print("\n| all_reduce bytes | time (us) | algbw (GB/s) | busbw (GB/s) |")
print("|---|---|---|---|")
local bytes = 1 << 20
while bytes <= opts.max do
  local bufs = {}
  for r = 1, n do bufs[r] = g.backends[r]:buffer("f32", bytes // 4) end
  g:all_reduce(bufs)
  g:synchronize() -- warm-up: connections, buffers
  local t0 = core.now_ns()
  for _ = 1, opts.iters do g:all_reduce(bufs) end
  g:synchronize()
  local t = (core.now_ns() - t0) / 1e9 / opts.iters
  local alg = bytes / t / 1e9
  print(("| %d | %.1f | %.2f | %.2f |"):format(bytes, t * 1e6, alg, alg * 2 * (n - 1) / n))
  for r = 1, n do bufs[r]:free() end
  bytes = bytes * 4
end

do
  local size = math.min(opts.max, 1 << 30)
  local a = g.backends[1]:buffer("f32", size // 4)
  local b = g.backends[2]:buffer("f32", size // 4)
  a:copy_to(b)
  g.backends[2]:synchronize()
  local t0 = core.now_ns()
  for _ = 1, opts.iters do a:copy_to(b) end
  g.backends[1]:synchronize()
  g.backends[2]:synchronize()
  local t = (core.now_ns() - t0) / 1e9
  print(("\npeer copy %d bytes 0 -> 1 (%s): %.2f GB/s"):format(size,
    g.backends[1]:info().peers[1], size * opts.iters / t / 1e9))
  a:free()
  b:free()
end

do
  local per = opts.sum // 4
  local bufs = {}
  for r = 1, n do
    bufs[r] = g.backends[r]:buffer("f32", per)
    bufs[r]:fill(1.0)
  end
  local lib = vyre.lib
  lib.reduce(g, bufs)
  local t0 = core.now_ns()
  lib.reduce(g, bufs)
  local tg = (core.now_ns() - t0) / 1e9
  lib.reduce(g.backends[1], bufs[1])
  t0 = core.now_ns()
  lib.reduce(g.backends[1], bufs[1])
  local t1 = (core.now_ns() - t0) / 1e9
  -- n GPUs sum n x the data of one in about the same time: speedup = n * t1 / tg
  print(("\nsum of %d bytes per GPU: %d GPUs %.2f ms, one GPU (its share) %.2f ms, "
    .. "speedup over one GPU summing all %.2fx"):format(opts.sum, n, tg * 1e3, t1 * 1e3,
    n * t1 / tg))
end
g:free()
