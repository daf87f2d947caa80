-- bench/multigpu/bench.lua — the vyre side of docs/MULTIGPU.md §7 on the GPUs of this
-- machine: all_reduce bus bandwidth (f32, in place, one process driving N GPUs) from
-- 1 MiB to --max bytes, peer copy GB/s (buf:copy_to, device 0 -> 1), and the sum of
-- --sum bytes per GPU with lib.reduce over the group vs one GPU, the global sort of
-- --sort u32 keys (lib.sort over the group vs one GPU sorting them all), and Jacobi weak
-- scaling (a --width x --width strip per GPU, --sweeps sweeps with halo exchange, vs one
-- strip on one GPU). Prints markdown rows and each row's ratio; the baselines are
-- torch_allreduce.py (torch.distributed, NCCL) and vyre_bench_peer (cuMemcpyPeerAsync in
-- C), run on the same machine in the same session (run.sh). Timing: the all_reduce loop
-- is the baseline's (one warm-up call and a wait, then --iters calls and one wait).
--   lua5.4 bench/multigpu/bench.lua [--gpus N] [--max BYTES] [--iters K] [--sum BYTES]
--     [--sort KEYS] [--width W] [--sweeps S]
package.path = (arg and arg[0] and arg[0]:match("^(.*)/bench/") or ".")
  .. "/examples/support/?.lua;" .. package.path
local vyre = require("vyre")
local core = require("vyre.core")

local opts = { gpus = nil, max = 1 << 30, iters = 20, sum = 4 << 30, sort = 1 << 30,
  width = 16384, sweeps = 50 }
local USAGE = "usage: bench.lua [--gpus N] [--max BYTES] [--iters K] [--sum BYTES] "
  .. "[--sort KEYS] [--width W] [--sweeps S]\n"
local i = 1
while i <= #arg do
  local k, v = arg[i]:match("^%-%-(%w+)$"), arg[i + 1]
  if not k or opts[k] == nil and k ~= "gpus" or not math.tointeger(tonumber(v)) then
    io.stderr:write(USAGE)
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

-- One warm-up call and a wait, then --iters calls and one wait: the baseline's loop.
local function all_reduce_row(grp, bytes)
  local bufs = {}
  for r = 1, n do bufs[r] = grp.backends[r]:buffer("f32", bytes // 4) end
  grp:all_reduce(bufs)
  grp:synchronize() -- warm-up: connections, buffers
  local t0 = core.now_ns()
  for _ = 1, opts.iters do grp:all_reduce(bufs) end
  grp:synchronize()
  local t = (core.now_ns() - t0) / 1e9 / opts.iters
  for r = 1, n do bufs[r]:free() end
  local alg = bytes / t / 1e9
  return ("| %d | %.1f | %.2f | %.2f |"):format(bytes, t * 1e6, alg, alg * 2 * (n - 1) / n)
end

print(("\n| all_reduce bytes (%s) | time (us) | algbw (GB/s) | busbw (GB/s) |")
  :format(g.blocking and "blocking" or "non-blocking"))
print("|---|---|---|---|")
local bytes = 1 << 20
while bytes <= opts.max do
  print(all_reduce_row(g, bytes))
  bytes = bytes * 4
end

do
  -- The same small calls on non-blocking communicators (the default of one rank per
  -- process): NCCL starts a thread for each of their group launches (docs/MULTIGPU.md).
  local nb = cuda.group(ords, { blocking = false })
  print("\n| all_reduce bytes (non-blocking) | time (us) | algbw (GB/s) | busbw (GB/s) |")
  print("|---|---|---|---|")
  local b2 = 1 << 20
  while b2 <= math.min(opts.max, 16 << 20) do
    print(all_reduce_row(nb, b2))
    b2 = b2 * 4
  end
  nb:free()
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
  for r = 1, n do bufs[r]:free() end
end

-- Pseudo-random u32 keys (a hash of the index), generated on each GPU.
local HASH = vyre.parse([[
(program multigpu_hash (workgroup 256)
  (buffer v u32 write)
  (param seed u32)
  (param base u32)
  (let i (add (gid x) base))
  (let h0 (mul (xor i seed) 2654435761u32))
  (let h1 (xor h0 (shr h0 15u32)))
  (let h2 (mul h1 2246822519u32))
  (let h3 (xor h2 (shr h2 13u32)))
  (let h4 (mul h3 3266489917u32))
  (if (lt (gid x) (len v)) (then (store v (gid x) (xor h4 (shr h4 16u32))))))
]])

do
  local total = opts.sort
  local per = total // n
  local hash, keys = {}, {}
  for r = 1, n do hash[r] = g.backends[r]:compile(HASH) end
  local function fill(seed)
    for r = 1, n do
      hash[r]:launch({ v = keys[r], seed = seed, base = (r - 1) * per }, { n = per })
    end
    g:synchronize()
  end
  for r = 1, n do keys[r] = g.backends[r]:buffer("u32", per) end
  local lib = vyre.lib
  fill(1)
  lib.sort(g, keys) -- warm-up: kernels, scratch
  fill(2)
  local t0 = core.now_ns()
  lib.sort(g, keys)
  local tg = (core.now_ns() - t0) / 1e9
  for r = 1, n do keys[r]:free() end
  for r = 2, n do lib.release(g.backends[r]) end -- the other devices' sort scratch
  local all = g.backends[1]:buffer("u32", per * n)
  hash[1]:launch({ v = all, seed = 1, base = 0 }, { n = per * n })
  lib.sort(g.backends[1], all)
  hash[1]:launch({ v = all, seed = 2, base = 0 }, { n = per * n })
  g.backends[1]:synchronize()
  t0 = core.now_ns()
  lib.sort(g.backends[1], all)
  local t1 = (core.now_ns() - t0) / 1e9
  all:free()
  lib.release(g.backends[1])
  print(("\nglobal sort of %d u32 keys: %d GPUs %.2f ms, one GPU %.2f ms, speedup %.2fx")
    :format(per * n, n, tg * 1e3, t1 * 1e3, t1 / tg))
  local ph = {}
  for _, p in ipairs(require("vyre.group_lib").last_sort_phases or {}) do
    ph[#ph + 1] = ("%s %.2f ms"):format(p[1], p[2] / 1e6)
  end
  if #ph > 0 then print("  phases (wall): " .. table.concat(ph, ", ")) end
end

do
  -- Weak scaling: every GPU sweeps a w x w strip (plus two halo rows), exchanging halo
  -- rows with its neighbours by peer copies after each sweep, as examples/jacobi_multi.lua
  -- does; one GPU sweeps one such strip alone. Efficiency = t(one) / t(n GPUs).
  local sweep = require("jacobi_strip")
  local w = opts.width
  local function strips(bes)
    local list = {}
    for r, be in ipairs(bes) do
      local s = { be = be, k = be:compile(sweep), a = be:buffer("f32", (w + 2) * w),
        b = be:buffer("f32", (w + 2) * w), diff = be:buffer("f32", (w + 2) * w) }
      s.a:fill(r == 1 and 1.0 or 0.0)
      s.b:fill(0.0)
      s.diff:zero()
      list[r] = s
    end
    return list
  end
  local function run(list, sweeps)
    local m = #list
    for it = 1, sweeps do
      local src, dst = it % 2 == 1 and "a" or "b", it % 2 == 1 and "b" or "a"
      for r, s in ipairs(list) do
        s.k:launch({ u = s[src], v = s[dst], diff = s.diff, w = w, rows = w,
          top = r == 1 and 1 or 0, bottom = r == m and 1 or 0 }, { n = { w, w } })
      end
      for r = 1, m - 1 do
        local up, down = list[r], list[r + 1]
        up[dst]:view(w * w + 1, w):copy_to(down[dst]:view(1, w))
        down[dst]:view(w + 1, w):copy_to(up[dst]:view((w + 1) * w + 1, w))
      end
    end
    for _, s in ipairs(list) do s.be:synchronize() end
  end
  local function time(list)
    run(list, 2) -- warm-up
    local t0 = core.now_ns()
    run(list, opts.sweeps)
    local t = (core.now_ns() - t0) / 1e9
    for _, s in ipairs(list) do
      s.a:free()
      s.b:free()
      s.diff:free()
    end
    return t
  end
  local tn = time(strips(g.backends))
  local t1 = time(strips({ g.backends[1] }))
  print(("\nJacobi weak scaling, a %dx%d strip per GPU, %d sweeps: %d GPUs %.2f ms, one GPU "
    .. "%.2f ms, efficiency %.1f %%"):format(w, w, opts.sweeps, n, tn * 1e3, t1 * 1e3,
    100 * t1 / tn))
end
g:free()
